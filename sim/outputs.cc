#include "sim/outputs.h"

#include <spdlog/sinks/base_sink.h>

#include <cmath>
#include <fstream>
#include <mutex>
#include <string>

#include "node/config/logging.h"
#include "node/host/node_host.h"

namespace meshlearn::sim {
namespace {

// A node's log, kept in memory and appended to its file in batches, so that a simulated node
// holds no file open.
class BufferedFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit BufferedFileSink(std::string path) : path_(std::move(path)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    if (buffer_.empty()) buffer_.reserve(kBatchBytes + formatted.size());  // once per batch
    buffer_.append(formatted.data(), formatted.size());
    if (buffer_.size() >= kBatchBytes) flush_();
  }
  void flush_() override {
    if (buffer_.empty()) return;
    std::ofstream out(path_, std::ios::app | std::ios::binary);
    out << buffer_;
    std::string().swap(buffer_);  // gives the memory back: most nodes log little until they end
  }

 private:
  // Rationale: every simulated node holds up to this much; at 100,000 nodes 1 KiB is 100 MB
  // (4 KiB, grown by doubling, held 5 KB a node), and a node that ends logs a line per peer that
  // says goodbye. Appending a few lines at a time costs one open and close each.
  static constexpr size_t kBatchBytes = 1024;
  std::string path_;
  std::string buffer_;
};

// The status of node `n` for a progress report.
node::NodeStatus StatusOf(const SimNode& n) {
  if (n.host) return n.host->TakeStatus();
  if (n.final_status) return *n.final_status;
  node::NodeStatus dead;  // what it had
  dead.id = n.config.id;
  dead.endpoint = n.config.listen;
  dead.round = n.last_round;
  dead.rounds = n.config.training.rounds;
  dead.val_loss = n.last_val_loss;
  return dead;
}

}  // namespace

std::shared_ptr<spdlog::logger> MakeBufferedNodeLogger(const node::NodeConfig& config) {
  auto log = MakeNodeLogger(config.id, config.log_level,
                            std::make_shared<BufferedFileSink>(node::NodeLogPathOf(config)));
  log->flush_on(spdlog::level::off);  // the simulation flushes (the specification)
  return log;
}

SimulationProgress ProgressOf(const std::vector<SimNode>& nodes, double simulated_seconds,
                              double real_seconds, uint64_t events, bool with_status) {
  SimulationProgress p;
  double sum = 0;
  int count = 0;
  for (const SimNode& n : nodes) {
    p.reached.push_back(n.last_round);
    if (n.last_round >= 0 && std::isfinite(n.last_val_loss)) {
      sum += n.last_val_loss;
      ++count;
    }
  }
  p.mean_val_loss = count ? sum / count : NAN;
  p.simulated_seconds = simulated_seconds;
  p.real_seconds = real_seconds;
  p.events = events;
  if (with_status) {
    for (const SimNode& n : nodes) p.statuses.push_back(StatusOf(n));
  }
  return p;
}

void ProgressReports::Start() {
  start_ = std::chrono::steady_clock::now();
  last_ = start_;
}

double ProgressReports::real_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool ProgressReports::Due(uint64_t events) {
  if (!on_progress_ || events % 256 != 0) return false;
  auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::seconds(1)) return false;
  last_ = now;
  return true;
}

void ProgressReports::Report(const SimulationProgress& progress) const {
  if (on_progress_) on_progress_(progress);
}

}  // namespace meshlearn::sim
