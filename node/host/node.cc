#include "node/host/node.h"

#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>

#include "node/config/logging.h"
#include "node/host/relays.h"
#include "node/host/status_document.h"
#include "node/learner/learner_worker.h"
#include "node/transport/zmq_transport.h"
#include "process/http_server.h"

namespace meshlearn::node {
namespace {

// The world of a node process (node/host/world.h): the steady clock, the transport the factory
// starts, the event thread (the caller of Node::Run) that takes posted tasks from a queue, a
// worker thread for learner jobs, and durable outputs.
class ProcessWorld final : public World {
 public:
  explicit ProcessWorld(TransportFactory transport) : transport_(std::move(transport)) {}

  TimePoint Now() const override { return Clock::now(); }

  Result<std::unique_ptr<Transport>> StartTransport(TransportOptions options,
                                                    InboundHandler on_request) override {
    return transport_(std::move(options), std::move(on_request));
  }

  void Post(std::function<void()> task) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

  void RunJob(std::shared_ptr<Learner> learner, LearnerJob job,
              std::function<void(LearnerResult)> done) override {
    if (!worker_) {
      learner_ = std::move(learner);
      worker_ = std::make_unique<LearnerWorker>(*learner_, [this](LearnerResult result) {
        std::function<void(LearnerResult)> done;
        {
          std::lock_guard<std::mutex> lock(mu_);
          done = std::move(job_done_.front());
          job_done_.pop_front();
        }
        done(std::move(result));
      });
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_done_.push_back(std::move(done));
    }
    worker_->Enqueue(std::move(job));
  }

  OutputKeeping outputs() const override { return OutputKeeping::kDurable; }

  uint64_t Nonce(const std::string&) override { return std::random_device{}(); }

  // Waits up to `limit` for posted tasks (or Wake()), then runs them in order; false when
  // Wake() asked to stop.
  bool RunTasks(Clock::duration limit) {
    std::deque<std::function<void()>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, limit, [&] { return !tasks_.empty() || stop_requested_; });
      if (stop_requested_) return false;
      batch.swap(tasks_);
    }
    for (std::function<void()>& task : batch) task();
    return true;
  }

  // Makes RunTasks() return false from now on. Thread-safe.
  void RequestStop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_requested_ = true;
    }
    cv_.notify_all();
  }

  // Lets RunTasks() run tasks again (after a stop request, to say goodbye).
  void ClearStop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = false;
  }

  // Stops the worker: a job under way finishes; its result is not handed over.
  void StopJobs() {
    if (worker_) worker_->Stop();
  }

 private:
  TransportFactory transport_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;                  // guarded by mu_
  std::deque<std::function<void(LearnerResult)>> job_done_;  // guarded by mu_
  bool stop_requested_ = false;                              // guarded by mu_
  std::shared_ptr<Learner> learner_;
  std::unique_ptr<LearnerWorker> worker_;
};

}  // namespace

class Node::Impl {
 public:
  NodeConfig config;
  std::unique_ptr<ProcessWorld> world;
  NodeRelays relays;  // declared before host: the relays stop after the node's transport
  std::unique_ptr<NodeHost> host;
  std::unique_ptr<HttpServer> http;

  mutable std::mutex status_mu;
  std::string status_json = "{}";
  NodeStatus status_snapshot;
  std::string metrics_text;
  NodeProgress progress;
  uint64_t refused_logged = 0;
  std::optional<Clock::time_point> last_refused_log;

  // A copy of `text` (status_json or metrics_text) taken under status_mu.
  std::string Locked(const std::string& text) const {
    std::lock_guard<std::mutex> lock(status_mu);
    return text;
  }

  void RefreshStatus() {
    NodeStatus status = host->TakeStatus();
    if (http) {
      status.http_requests = http->requests();
      status.http_cpu_s = http->cpu_seconds();
    }
    std::string json = node::StatusJson(status);
    std::string metrics = node::MetricsText(status);
    std::lock_guard<std::mutex> lock(status_mu);
    progress.completed_round = host->completed_round();
    progress.stopped = host->early_stopped();
    progress.last_val_loss = host->last_val_loss();
    progress.last_epsilon = host->last_epsilon();
    progress.finished = host->finished();
    status_json = std::move(json);
    metrics_text = std::move(metrics);
    status_snapshot = std::move(status);
  }

  // Logs connections the ZAP handler refused since the last such line, at most once a minute.
  void LogRefusedHandshakes(Clock::time_point now) {
    uint64_t refused = host->transport_stats().handshakes_refused;
    if (refused == refused_logged ||
        (last_refused_log && now - *last_refused_log < std::chrono::minutes(1))) {
      return;
    }
    host->log().warn(
        "refused {} connection attempt(s) whose CURVE key is not on the allowlist ({} in total; "
        "logged at most once a minute)",
        refused - refused_logged, refused);
    refused_logged = refused;
    last_refused_log = now;
  }
};

Result<std::unique_ptr<Node>> Node::Create(const NodeConfig& config, NodeOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  auto relays = StartRelays(impl->config);
  if (!relays.ok()) return relays.status();
  impl->relays = std::move(*relays);
  impl->world = std::make_unique<ProcessWorld>(
      options.transport ? std::move(options.transport) : TransportFactory(StartZmqTransport));
  HostOptions host_options;
  host_options.logger = std::move(options.logger);
  host_options.observer = std::move(options.observer);
  host_options.learner = std::move(options.learner);
  auto host = NodeHost::Create(impl->config, *impl->world, std::move(host_options));
  if (!host.ok()) return host.status();
  impl->host = std::move(*host);
  if (impl->relays.server) {
    impl->host->log().info(
        "serving as a relay for nodes behind NAT at {} (at most {} nodes, {} "
        "connections each)",
        impl->relays.server->control_endpoint(), config.relay.max_clients,
        config.relay.max_circuits);
  }
  if (impl->relays.client) {
    impl->host->log().info("behind the relay at {}: reachable at {}", config.relay.via,
                           impl->config.advertise);
  }
  Impl* raw = impl.get();

  if (config.http_port) {
    auto text = [](std::string content_type, std::string body) {
      return HttpResponse{200, std::move(content_type), std::move(body)};
    };
    auto http = HttpServer::Start(
        config.http_bind, *config.http_port,
        {{"/",
          [text](const HttpRequest&) {
            return text("text/html; charset=utf-8", std::string(NodePageFile("node.html")));
          }},
         {"/status",
          [raw, text](const HttpRequest&) {
            return text("application/json", raw->Locked(raw->status_json));
          }},
         {"/metrics", [raw, text](const HttpRequest&) {
            return text("text/plain; version=0.0.4", raw->Locked(raw->metrics_text));
          }}});
    if (!http.ok()) return http.status().WithContext("http_port");
    impl->http = std::move(*http);
  }
  impl->RefreshStatus();
  return std::unique_ptr<Node>(new Node(std::move(impl)));
}

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Node::~Node() {
  Stop();
  impl_->world->StopJobs();
  impl_->http.reset();
  impl_->host.reset();  // stops the transport
}

Status Node::Run() {
  Impl& s = *impl_;
  NodeHost& host = *s.host;
  host.Start();
  auto last_status = Clock::now();
  bool stopped = false;
  for (;;) {
    if (!s.world->RunTasks(kTickInterval)) {
      stopped = true;
      break;
    }
    host.Tick();
    auto now = Clock::now();
    // The status documents are rebuilt at most twice a second: with 100 peers each rebuild
    // formats a few kB, and 100 in-process nodes ticking every 50 ms would spend the CPU on it.
    if (now - last_status >= std::chrono::milliseconds(500) || host.finished()) {
      s.RefreshStatus();
      s.LogRefusedHandshakes(now);
      last_status = now;
    }
    if (!host.failure().ok() || host.finished()) break;
  }
  s.world->StopJobs();  // an ongoing local training finishes; its round is not recorded
  s.world->ClearStop();
  host.Leave(stopped ? "stopped" : host.failure().ok() ? "finished its rounds" : "failed");
  // The transport answers every request by its deadline; the bound is only a safety net.
  auto until = Clock::now() + std::chrono::seconds(5);
  while (!host.done() && Clock::now() < until && s.world->RunTasks(kTickInterval)) {
  }
  host.LogStopped();
  s.RefreshStatus();
  return host.failure();
}

void Node::Stop() { impl_->world->RequestStop(); }

const std::string& Node::endpoint() const { return impl_->host->endpoint(); }
const std::string& Node::id() const { return impl_->config.id; }

NodeProgress Node::Progress() const {
  std::lock_guard<std::mutex> lock(impl_->status_mu);
  return impl_->progress;
}

std::string Node::StatusJson() const { return impl_->Locked(impl_->status_json); }

NodeStatus Node::StatusSnapshot() const {
  std::lock_guard<std::mutex> lock(impl_->status_mu);
  return impl_->status_snapshot;
}

std::string Node::MetricsText() const { return impl_->Locked(impl_->metrics_text); }

uint16_t Node::http_port() const { return impl_->http ? impl_->http->port() : 0; }

}  // namespace meshlearn::node
