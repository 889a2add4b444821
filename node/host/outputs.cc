#include "node/host/outputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "node/host/node_files.h"

namespace meshlearn::node {
namespace {

// Peer ids joined by ';', as one CSV field (base/csv.h).
std::string JoinPeers(const std::vector<std::string>& peers) {
  std::string joined;
  for (size_t i = 0; i < peers.size(); ++i) joined += (i ? ";" : "") + peers[i];
  return CsvField(joined);
}

// Reads the cells of one rounds.csv row (17 columns, epsilon included) into `r`.
Status ReadRoundRow(const std::string& path, const CsvRecord& row, RoundRow& r) {
  static const std::vector<std::string> kColumns = [] {
    auto header = ParseCsv(kRoundsCsvHeader, "header");
    return header->front().fields;
  }();
  Status status;
  // Cell `column` into `out`, unless an earlier cell failed.
  auto read = [&]<typename T>(size_t column, T& out, const NumberForm& form) {
    if (!status.ok()) return;
    auto value = CsvNumber<T>(path, row, column, kColumns[column], form);
    if (value.ok()) out = *value;
    status = value.status();
  };
  int stopped = 0;
  read(0, r.round, {});
  read(1, r.wall_s, kExactNumberForm);
  read(2, r.train_loss, kExactNumberForm);
  read(3, r.val_loss, kExactNumberForm);
  read(4, r.val_acc, kExactNumberForm);
  read(5, r.test_loss, kExactNumberForm);
  read(6, r.test_acc, kExactNumberForm);
  read(7, r.sampled, {.min = 0});
  read(8, r.answered, {.min = 0});
  read(9, r.bytes_in, {});
  read(10, r.bytes_out, {});
  read(11, stopped, {.min = 0, .max = 1});
  read(12, r.train_s, kExactNumberForm);
  read(13, r.eval_s, kExactNumberForm);
  read(14, r.temperature, kExactNumberForm);
  read(15, r.epsilon, kExactNumberForm);
  r.stopped = stopped == 1;
  std::istringstream peers(row.fields[16]);
  for (std::string p; std::getline(peers, p, ';');) r.peers.push_back(p);
  return status;
}

}  // namespace

Result<std::vector<RoundRow>> ReadRoundsCsv(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  const std::string_view first_line = std::string_view(*text).substr(0, text->find('\n'));
  if (first_line != kRoundsCsvHeader && first_line != kRoundsCsvHeaderWithoutEpsilon) {
    return Status::Malformed(path + ":1: header is not '" + std::string(kRoundsCsvHeader) + "'");
  }
  auto records = ParseCsv(*text, path);
  if (!records.ok()) return records.status();
  const size_t columns = first_line == kRoundsCsvHeader ? 17 : 16;
  std::vector<RoundRow> rows;
  for (size_t i = 1; i < records->size(); ++i) {
    CsvRecord& row = (*records)[i];
    if (row.fields.size() != columns) {
      return Status::Malformed(path + ":" + std::to_string(row.line) + ": " +
                               std::to_string(row.fields.size()) + " cells, expected " +
                               std::to_string(columns));
    }
    if (columns == 16) row.fields.insert(row.fields.begin() + 15, "");  // no epsilon
    RoundRow r;
    MESHLEARN_RETURN_IF_ERROR(ReadRoundRow(path, row, r));
    rows.push_back(std::move(r));
  }
  return rows;
}

pid_t NodeFolderLockHolder(const std::string& dir) {
  return FileLock::Holder(dir + "/" + kNodeLockFile);
}

Status NodeOutputs::Lock() {
  lock_.reset();
  auto lock = FileLock::Acquire(dir_ + "/" + kNodeLockFile);
  if (!lock.ok()) {
    if (lock.status().code() != ErrorCode::kUnavailable) return lock.status();
    return Status::Unavailable(
        lock.status().message() +
        ": another node is writing to this folder, and two nodes writing one folder would mix "
        "their rounds and checkpoints; stop that node, or give this one another output_dir");
  }
  lock_ = std::move(*lock);
  return Status::Ok();
}

Status NodeOutputs::StartRoundsCsv() {
  const std::string path = dir_ + "/" + kRoundsFile;
  rounds_.close();
  MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(path, rounds_text_));
  rounds_.clear();
  rounds_.open(path, std::ios::app);
  struct stat info {};
  if (!rounds_ || ::stat(path.c_str(), &info) != 0) {
    return Status::IoError(path + ": cannot open for appending");
  }
  rounds_inode_ = info.st_ino;
  rounds_device_ = info.st_dev;
  return Status::Ok();
}

bool NodeOutputs::RoundsCsvIsOurs() const {
  struct stat info {};
  return ::stat((dir_ + "/" + kRoundsFile).c_str(), &info) == 0 && info.st_ino == rounds_inode_ &&
         info.st_dev == rounds_device_;
}

Result<NodeOutputs> NodeOutputs::Open(const std::string& dir, int64_t resume_round,
                                      std::shared_ptr<spdlog::logger> log, Mode mode,
                                      FileWriter write) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create the output folder: " + ec.message());
  NodeOutputs outputs(dir);
  outputs.log_ = std::move(log);
  outputs.buffered_ = mode == Mode::kBuffered;
  outputs.write_ = write ? std::move(write) : FileWriter(WriteFileAtomically);
  if (!outputs.buffered_) MESHLEARN_RETURN_IF_ERROR(outputs.Lock());
  std::string path = dir + "/" + kRoundsFile;
  outputs.rounds_text_ = std::string(kRoundsCsvHeader) + "\n";
  if (resume_round >= 0) {
    auto old = ReadWholeFile(path);
    if (old.ok()) {
      std::istringstream lines(*old);
      std::string line;
      std::getline(lines, line);  // header
      const bool without_epsilon = line == kRoundsCsvHeaderWithoutEpsilon;
      for (size_t number = 2; std::getline(lines, line); ++number) {
        if (line.empty()) continue;
        auto round = ParseNumber<int64_t>(line.substr(0, line.find(',')),
                                          CsvWhere(path, number, 1) + " (round)");
        if (!round.ok()) return round.status();
        if (*round > resume_round) continue;
        if (without_epsilon) {  // an empty epsilon cell before the peers, the last cell
          size_t cut = line.find(',');
          for (int i = 1; i < 15 && cut != std::string::npos; ++i) cut = line.find(',', cut + 1);
          if (cut != std::string::npos) line.insert(cut + 1, ",");
        }
        outputs.rounds_text_ += line + "\n";
      }
    }
  }
  if (outputs.buffered_) {
    outputs.rounds_unwritten_ = true;
  } else {
    MESHLEARN_RETURN_IF_ERROR(outputs.StartRoundsCsv());
  }
  return outputs;
}

Status NodeOutputs::Flush() {
  if (rounds_unwritten_) {
    MESHLEARN_RETURN_IF_ERROR(write_(dir_ + "/" + kRoundsFile, rounds_text_));
    rounds_unwritten_ = false;
  }
  for (const auto& [name, bytes] : unwritten_) {
    MESHLEARN_RETURN_IF_ERROR(write_(dir_ + "/" + name, bytes));
  }
  unwritten_.clear();
  return Status::Ok();
}

Status NodeOutputs::RecreateIfGone() {
  if (RoundsCsvIsOurs()) return Status::Ok();
  size_t rows = static_cast<size_t>(std::count(rounds_text_.begin(), rounds_text_.end(), '\n') - 1);
  if (log_) {
    log_->warn(
        "{}/rounds.csv is gone (deleted while the node ran?): recreating {} with rounds.csv and "
        "its {} rows so far; the checkpoint and the other tables follow",
        dir_, dir_, rows);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::IoError(dir_ + ": cannot recreate the output folder: " + ec.message());
  MESHLEARN_RETURN_IF_ERROR(Lock());
  return StartRoundsCsv();
}

Status NodeOutputs::AppendRound(const RoundRecord& r, uint64_t bytes_in, uint64_t bytes_out) {
  if (!buffered_) MESHLEARN_RETURN_IF_ERROR(RecreateIfGone());
  const RoundOutcome& o = r.outcome;
  std::ostringstream row;
  row << r.round << ',' << ExactNumber(r.wall_seconds) << ',' << ExactNumber(o.train_loss) << ','
      << ExactNumber(o.val_loss) << ',' << ExactNumber(o.val_acc) << ',' << ExactNumber(o.test_loss)
      << ',' << ExactNumber(o.test_acc) << ',' << r.sampled << ',' << r.answered << ',' << bytes_in
      << ',' << bytes_out << ',' << (r.stopped ? 1 : 0) << ',' << ExactNumber(o.train_seconds)
      << ',' << ExactNumber(o.eval_seconds) << ',' << ExactNumber(o.temperature) << ','
      << ExactNumber(o.epsilon) << ',' << JoinPeers(r.sampled_peers) << '\n';
  if (buffered_) {
    rounds_text_ += row.str();
    rounds_unwritten_ = true;
    return Status::Ok();
  }
  rounds_ << row.str();
  rounds_.flush();
  if (!rounds_) return Status::IoError(dir_ + "/rounds.csv: write failed");
  rounds_text_ += row.str();
  // Deleted while the row was written: the row went with the old file, and comes back now.
  return RecreateIfGone();
}

Status NodeOutputs::Replace(const std::string& name, std::string_view bytes) {
  if (buffered_) {
    unwritten_[name] = std::string(bytes);
    return Status::Ok();
  }
  MESHLEARN_RETURN_IF_ERROR(RecreateIfGone());
  Status written = WriteFileAtomically(dir_ + "/" + name, bytes);
  if (!written.ok() && !RoundsCsvIsOurs()) {
    // The folder went while the file was written: once more, in the recreated folder.
    MESHLEARN_RETURN_IF_ERROR(RecreateIfGone());
    written = WriteFileAtomically(dir_ + "/" + name, bytes);
  }
  MESHLEARN_RETURN_IF_ERROR(written);
  return RecreateIfGone();
}

Status NodeOutputs::WriteCluster(const std::vector<std::pair<std::string, int>>& partition,
                                 int64_t round) {
  std::ostringstream csv;
  csv << "node,label,round\n";
  for (const auto& [node, label] : partition) {
    csv << JoinPeers({node}) << ',' << label << ',' << round << '\n';
  }
  return Replace(kClusterFile, csv.str());
}

Status NodeOutputs::WriteEmd(const std::vector<EmdRow>& rows) {
  std::ostringstream csv;
  csv << "peer,emd,ref,accepted,peer_accepted,mutual,witness,threshold,measured_round,measured_s\n";
  auto flag = [](const std::optional<bool>& b) { return b ? (*b ? "1" : "0") : ""; };
  for (const EmdRow& r : rows) {
    csv << JoinPeers({r.peer}) << ',' << ExactNumber(r.emd) << ',' << ExactNumber(r.reference)
        << ',' << flag(r.accepted) << ',' << flag(r.peer_accepted) << ',' << (r.mutual() ? 1 : 0)
        << ',' << (r.witness.empty() ? "" : JoinPeers({r.witness})) << ','
        << ExactNumber(r.threshold) << ','
        << (r.measured_round ? std::to_string(*r.measured_round) : "") << ','
        << ExactNumber(r.measured_seconds) << '\n';
  }
  return Replace(kEmdFile, csv.str());
}

Status NodeOutputs::WriteSignatures(const std::vector<SignatureRow>& rows) {
  std::ostringstream csv;
  csv << "peer,distance,related\n";
  for (const SignatureRow& r : rows) {
    csv << JoinPeers({r.peer}) << ',' << ExactNumber(r.distance) << ',' << (r.related ? 1 : 0)
        << '\n';
  }
  return Replace(kSignatureFile, csv.str());
}

Status NodeOutputs::WriteCommAndScores(const std::vector<topology::CommRow>& comm,
                                       const std::vector<topology::PeerRecord>& scores) {
  MESHLEARN_RETURN_IF_ERROR(Replace(kCommFile, topology::CommCsv(comm)));
  return Replace(kScoresFile, topology::ScoresCsv(scores));
}

}  // namespace meshlearn::node
