#include "node/outputs.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "base/atomic_file.h"

namespace meshlearn::node {
namespace {

// Shortest text that reads back to the same double; empty for NaN (not applicable).
std::string Number(double value) {
  if (std::isnan(value)) return "";
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

// Peer ids joined by ';', quoted as RFC 4180 demands when an id holds a comma, quote or newline.
std::string JoinPeers(const std::vector<std::string>& peers) {
  std::string joined;
  for (size_t i = 0; i < peers.size(); ++i) joined += (i ? ";" : "") + peers[i];
  if (joined.find_first_of(",\"\n") == std::string::npos) return joined;
  std::string quoted = "\"";
  for (char c : joined) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

double Cell(const std::string& text) {
  return text.empty() ? std::nan("") : std::strtod(text.c_str(), nullptr);
}

// Splits one CSV line on commas, honouring RFC 4180 quotes.
std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

}  // namespace

Result<std::vector<RoundRow>> ReadRoundsCsv(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  std::istringstream lines(*text);
  std::string line;
  if (!std::getline(lines, line) || line != kRoundsCsvHeader) {
    return Status::Malformed(path + ":1: header is not '" + std::string(kRoundsCsvHeader) + "'");
  }
  std::vector<RoundRow> rows;
  for (int number = 2; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    std::vector<std::string> c = SplitCsvLine(line);
    if (c.size() != 16) {
      return Status::Malformed(path + ":" + std::to_string(number) + ": " +
                               std::to_string(c.size()) + " cells, expected 16");
    }
    RoundRow r;
    r.round = std::strtoll(c[0].c_str(), nullptr, 10);
    r.wall_s = Cell(c[1]);
    r.train_loss = Cell(c[2]);
    r.val_loss = Cell(c[3]);
    r.val_acc = Cell(c[4]);
    r.test_loss = Cell(c[5]);
    r.test_acc = Cell(c[6]);
    r.sampled = std::atoi(c[7].c_str());
    r.answered = std::atoi(c[8].c_str());
    r.bytes_in = std::strtoull(c[9].c_str(), nullptr, 10);
    r.bytes_out = std::strtoull(c[10].c_str(), nullptr, 10);
    r.stopped = c[11] == "1";
    r.train_s = Cell(c[12]);
    r.eval_s = Cell(c[13]);
    r.temperature = Cell(c[14]);
    std::istringstream peers(c[15]);
    for (std::string p; std::getline(peers, p, ';');) r.peers.push_back(p);
    rows.push_back(std::move(r));
  }
  return rows;
}

Result<NodeOutputs> NodeOutputs::Open(const std::string& dir, int64_t resume_round) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create the output folder: " + ec.message());
  NodeOutputs outputs(dir);
  std::string path = dir + "/rounds.csv";
  std::string kept = std::string(kRoundsCsvHeader) + "\n";
  if (resume_round >= 0) {
    auto old = ReadWholeFile(path);
    if (old.ok()) {
      std::istringstream lines(*old);
      std::string line;
      std::getline(lines, line);  // header
      while (std::getline(lines, line)) {
        if (line.empty()) continue;
        int64_t round = std::strtoll(line.c_str(), nullptr, 10);
        if (round <= resume_round) kept += line + "\n";
      }
    }
  }
  MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(path, kept));
  outputs.rounds_.open(path, std::ios::app);
  if (!outputs.rounds_) return Status::IoError(path + ": cannot open for appending");
  return outputs;
}

Status NodeOutputs::AppendRound(const RoundRecord& r, uint64_t bytes_in, uint64_t bytes_out) {
  const RoundOutcome& o = r.outcome;
  rounds_ << r.round << ',' << Number(r.wall_seconds) << ',' << Number(o.train_loss) << ','
          << Number(o.val_loss) << ',' << Number(o.val_acc) << ',' << Number(o.test_loss) << ','
          << Number(o.test_acc) << ',' << r.sampled << ',' << r.answered << ',' << bytes_in << ','
          << bytes_out << ',' << (r.stopped ? 1 : 0) << ',' << Number(o.train_seconds) << ','
          << Number(o.eval_seconds) << ',' << Number(o.temperature) << ','
          << JoinPeers(r.sampled_peers) << '\n';
  rounds_.flush();
  if (!rounds_) return Status::IoError(dir_ + "/rounds.csv: write failed");
  return Status::Ok();
}

Status NodeOutputs::WriteCluster(const std::vector<std::pair<std::string, int>>& partition,
                                 int64_t round) {
  std::ostringstream csv;
  csv << "node,label,round\n";
  for (const auto& [node, label] : partition) {
    csv << JoinPeers({node}) << ',' << label << ',' << round << '\n';
  }
  return WriteFileAtomically(dir_ + "/cluster.csv", csv.str());
}

Status NodeOutputs::WriteEmd(const std::vector<EmdRow>& rows) {
  std::ostringstream csv;
  csv << "peer,emd,ref,accepted,peer_accepted,mutual,witness,threshold,measured_round,measured_s\n";
  auto flag = [](const std::optional<bool>& b) { return b ? (*b ? "1" : "0") : ""; };
  for (const EmdRow& r : rows) {
    csv << JoinPeers({r.peer}) << ',' << (r.emd ? Number(*r.emd) : "") << ','
        << (r.reference ? Number(*r.reference) : "") << ',' << flag(r.accepted) << ','
        << flag(r.peer_accepted) << ',' << (r.mutual() ? 1 : 0) << ','
        << (r.witness.empty() ? "" : JoinPeers({r.witness})) << ','
        << (r.threshold ? Number(*r.threshold) : "") << ','
        << (r.measured_round ? std::to_string(*r.measured_round) : "") << ','
        << (r.measured_seconds ? Number(*r.measured_seconds) : "") << '\n';
  }
  return WriteFileAtomically(dir_ + "/emd.csv", csv.str());
}

Status NodeOutputs::WriteSignatures(const std::vector<SignatureRow>& rows) {
  std::ostringstream csv;
  csv << "peer,distance,related\n";
  for (const SignatureRow& r : rows) {
    csv << JoinPeers({r.peer}) << ',' << Number(r.distance) << ',' << (r.related ? 1 : 0) << '\n';
  }
  return WriteFileAtomically(dir_ + "/signature.csv", csv.str());
}

Status NodeOutputs::WriteCommAndScores(const std::vector<topology::CommRow>& comm,
                                       const std::vector<topology::PeerRecord>& scores) {
  MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(dir_ + "/comm.csv", topology::CommCsv(comm)));
  return WriteFileAtomically(dir_ + "/scores.csv", topology::ScoresCsv(scores));
}

}  // namespace meshlearn::node
