#include "sim/snapshot.h"

#include <cmath>
#include <sstream>

#include "base/number_text.h"

namespace meshlearn::sim {
namespace {

constexpr const char* kSnapshotMagic = "meshlearn simulation snapshot 1";

}  // namespace

std::string SnapshotText(const SimulationSnapshot& s) {
  std::ostringstream out;
  out.precision(17);
  out << kSnapshotMagic << "\n"
      << "round " << s.round << "\n"
      << "every " << s.every << "\n"
      << "virtual_ns " << s.virtual_ns << "\n"
      << "simulated_seconds " << s.simulated_seconds << "\n";
  if (std::isfinite(s.real_seconds) && std::isfinite(s.compute_seconds)) {
    out << "spent_seconds " << s.real_seconds << " " << s.compute_seconds << "\n";
  }
  out << "generator " << s.generator << "\n"
      << "nodes " << s.nodes.size() << "\n";
  for (const NodeSnapshot& n : s.nodes) {
    out << "node " << n.id << " " << (n.running ? "running" : "finished") << " " << n.generation
        << " " << n.bytes_in << " " << n.bytes_out << " " << n.last_round << " " << n.last_val_loss
        << " " << n.outages.size();
    for (size_t o : n.outages) out << " " << o;
    out << "\n";
    if (n.failure) out << "failure " << *n.failure << "\n";
  }
  return out.str();
}

Result<SimulationSnapshot> ParseSnapshot(const std::string& text, const std::string& path) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  auto bad = [&](const std::string& what) {
    return Status::Malformed(path + ":" + std::to_string(number) + ": " + what +
                             " (the snapshot is damaged; delete the method's folder to run it "
                             "afresh)");
  };
  // The fields of the next line, which must start with `key`.
  auto next = [&](const std::string& key) -> Result<std::istringstream> {
    if (!std::getline(lines, line)) return bad("ends before '" + key + "'");
    ++number;
    std::istringstream fields(line);
    std::string word;
    if (!(fields >> word) || word != key) return bad("expected '" + key + "'");
    return fields;
  };
  ++number;
  if (!std::getline(lines, line) || line != kSnapshotMagic) {
    return bad("not a meshlearn simulation snapshot ('" + std::string(kSnapshotMagic) +
               "' expected)");
  }
  SimulationSnapshot s;
  size_t count = 0;
  auto f = next("round");
  if (!f.ok()) return f.status();
  if (!(*f >> s.round) || s.round < 0) return bad("bad round");
  if (!(f = next("every")).ok()) return f.status();
  if (!(*f >> s.every) || s.every <= 0) return bad("bad every");
  if (!(f = next("virtual_ns")).ok()) return f.status();
  if (!(*f >> s.virtual_ns) || s.virtual_ns < 0) return bad("bad virtual_ns");
  if (!(f = next("simulated_seconds")).ok()) return f.status();
  if (!(*f >> s.simulated_seconds)) return bad("bad simulated_seconds");
  const std::streampos before_spent = lines.tellg();
  const int number_before_spent = number;
  if ((f = next("spent_seconds")).ok()) {
    if (!(*f >> s.real_seconds >> s.compute_seconds) || !std::isfinite(s.real_seconds) ||
        !std::isfinite(s.compute_seconds) || s.real_seconds < 0 || s.compute_seconds < 0) {
      return bad("bad spent_seconds");
    }
  } else {  // optional: the line is the next field's
    lines.clear();
    lines.seekg(before_spent);
    number = number_before_spent;
  }
  if (!(f = next("generator")).ok()) return f.status();
  std::getline(*f >> std::ws, s.generator);
  if (s.generator.empty()) return bad("bad generator state");
  if (!(f = next("nodes")).ok()) return f.status();
  if (!(*f >> count)) return bad("bad node count");
  for (size_t i = 0; i < count; ++i) {
    if (!(f = next("node")).ok()) return f.status();
    NodeSnapshot n;
    std::string state, val_loss;
    size_t outages = 0;
    if (!(*f >> n.id >> state >> n.generation >> n.bytes_in >> n.bytes_out >> n.last_round >>
          val_loss >> outages) ||
        (state != "running" && state != "finished")) {
      return bad("bad node line");
    }
    n.running = state == "running";
    auto last_val_loss = NumberFromText<double>(val_loss, {.non_finite = true});  // "nan" included
    if (!last_val_loss) return bad("bad last validation loss '" + val_loss + "'");
    n.last_val_loss = *last_val_loss;
    for (size_t k = 0; k < outages; ++k) {
      size_t o = 0;
      if (!(*f >> o)) return bad("bad outage index");
      n.outages.push_back(o);
    }
    std::streampos after = lines.tellg();
    if (std::getline(lines, line) && line.rfind("failure ", 0) == 0) {
      ++number;
      n.failure = line.substr(8);
    } else {
      lines.clear();
      lines.seekg(after);
    }
    s.nodes.push_back(std::move(n));
  }
  return s;
}

}  // namespace meshlearn::sim
