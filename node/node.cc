#include "node/node.h"

#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <variant>

#include "node/checkpoint.h"
#include "node/endpoint.h"
#include "node/http_server.h"
#include "node/learner_worker.h"
#include "node/logging.h"
#include "node/node_recorder.h"
#include "node/outputs.h"
#include "node/state_machine.h"
#include "node/status_document.h"
#include "node/zmq_transport.h"
#include "protocol/codec.h"

namespace meshlearn::node {
namespace {

constexpr auto kTickInterval = std::chrono::milliseconds(50);

struct InboundEvent {
  InboundRequest request;
};
struct ReplyEvent {
  uint64_t request_id = 0;
  Result<std::vector<Frame>> frames;
};
// What the event thread consumes: messages from the transport and results from the worker.
using Event = std::variant<InboundEvent, ReplyEvent, LearnerResult>;

Clock::duration DurationOf(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

StateMachineConfig MachineConfigOf(const NodeConfig& config, const Learner& learner,
                                   const std::string& endpoint, const std::optional<NodeKeys>& keys,
                                   uint64_t nonce) {
  using similarity::MetricKind;
  using topology::SamplerKind;
  const Clock::duration deadline = DurationOf(config.round_deadline_s);
  StateMachineConfig c;
  c.id = config.id;
  c.seed = config.seed;

  MembershipConfig& m = c.membership;
  m.listen_endpoint = endpoint;
  m.architecture_id = learner.ArchitectureId();
  m.metric = std::string(NameOf(similarity::MetricKindNames(), config.metric));
  m.nonce = nonce;
  m.hello_deadline = deadline;
  m.dead_after_failures = config.dead_after_failures;
  m.dead_backoff = deadline;
  m.initial_peers = config.peers;
  m.mesh_size = config.mesh_size;
  if (keys) {
    m.public_key = keys->public_key;
    m.allowed_keys.emplace(keys->allowed_keys.begin(), keys->allowed_keys.end());
    m.key_ids = keys->key_ids;
  }

  c.serving = ServingConfig{learner.Layout(), learner.TrainSize(), deadline};

  RoundConfig& r = c.rounds;
  r.peers_per_round = config.peers_per_round;
  r.sync = config.sync;
  r.fetch_updates = config.ClusterPolicy().has_value();
  r.round_deadline = deadline;
  r.rounds = config.rounds;
  r.linger = DurationOf(config.linger_s);
  r.exchange_linger = EmdExchange::LingerLimit(deadline);
  r.min_round = DurationOf(config.min_round_s);

  EmdExchangeConfig& e = c.emd;
  e.enabled = config.emd_enabled;
  e.epsilon = config.emd_epsilon;
  e.max_samples = static_cast<uint32_t>(config.emd_max_samples);
  e.refresh = config.emd_refresh;
  e.peers_per_round = config.emd_peers_per_round;
  e.cluster_sampler = config.sampler == SamplerKind::kEmdCluster;
  e.metric = config.metric == MetricKind::kEmd;
  e.witness = config.emd_witness;
  e.layout = learner.Layout();
  e.nonce = nonce;
  e.round_deadline = deadline;

  SignatureConfig& s = c.signatures;
  s.enabled = config.UsesSignatures();
  s.own = learner.DataSignature();
  s.threshold = config.signature_threshold;
  s.metric = config.metric == MetricKind::kCentroid;
  s.cluster_sampler = config.sampler == SamplerKind::kCentroidCluster;
  s.request_deadline = deadline;
  return c;
}

topology::SamplerConfig SamplerConfigOf(const NodeConfig& config) {
  topology::SamplerConfig sampler;
  sampler.sampler = config.sampler;
  sampler.self = config.id;
  sampler.dac = {config.tau, config.unscored, config.tau_schedule, config.normalize,
                 config.two_hop};
  sampler.clusters = config.clusters;
  return sampler;
}

class Node::Impl {
 public:
  NodeConfig config;
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<Learner> learner;
  std::unique_ptr<NodeStateMachine> machine;
  std::unique_ptr<Transport> transport;
  std::optional<NodeRecorder> recorder;
  std::unique_ptr<HttpServer> http;
  DecodeOptions decode_options;
  LearnerState learner_state;   // the state after the last computed round, for checkpoints
  CheckpointIdentity identity;  // the run this node's checkpoints belong to

  // Events from the transport and the worker, consumed by the event thread.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> events;
  bool stop_requested = false;

  std::unique_ptr<LearnerWorker> worker;   // runs while Run() does
  std::map<InboundId, ReplyToken> tokens;  // event thread only
  MessageObserver observer;                // sees every decoded received message
  InboundId last_inbound = 0;
  Status failure;  // a failure of the node itself, ends Run()

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

  void Push(Event event) {
    {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(std::move(event));
    }
    cv.notify_one();
  }

  void Execute(Actions actions) {
    for (Action& action : actions) {
      if (std::optional<LearnerJob> job = JobOf(action)) {
        worker->Enqueue(std::move(*job));
      } else {
        std::visit([&](auto& a) { Do(a); }, action);
      }
    }
  }

  void Do(SendRequest& a) {
    uint64_t id = a.request_id;
    transport->Request(
        a.endpoint, id, Encode(a.message), a.deadline,
        [this, id](Result<std::vector<Frame>> frames) {
          Push(ReplyEvent{id, std::move(frames)});
        },
        a.public_key);
  }

  void Do(SendReply& a) {
    auto it = tokens.find(a.inbound);
    if (it == tokens.end()) return;
    transport->Reply(it->second, Encode(a.message));
    tokens.erase(it);
  }

  // Learner jobs go to the worker (Execute); these never reach Do().
  void Do(StartCompute&) {}
  void Do(StartEmbed&) {}
  void Do(StartEmd&) {}
  void Do(StartOwnProjection&) {}
  void Do(StartWitnessEmd&) {}

  // ", epsilon 1.234" for the round's log line; empty without [privacy].
  static std::string EpsilonText(double epsilon) {
    if (std::isnan(epsilon)) return "";
    char text[48];
    std::snprintf(text, sizeof(text), ", epsilon %.3f", epsilon);
    return text;
  }

  void Do(RoundCompleted& a) {
    const RoundRecord& r = a.record;
    TransportStats stats = transport->Stats();
    Status written = recorder->AppendRound(r, stats.bytes_in, stats.bytes_out);
    if (written.ok()) written = recorder->WriteTables(*machine);
    if (written.ok()) {
      Checkpoint checkpoint;
      checkpoint.round = r.round;
      checkpoint.stopped = r.stopped;
      checkpoint.learner = learner_state;
      checkpoint.machine = machine->ExportState();
      checkpoint.identity = identity;
      written = recorder->WriteCheckpoint(checkpoint);
    }
    if (!written.ok()) {
      log->error("cannot write outputs of round {}: {}", r.round, written.ToString());
      failure = written;
    }
    log->info(
        "round {} done: val_loss {:.4f} test_loss {:.4f} test_acc {:.4f}, {} of {} peers "
        "answered{}{}",
        r.round, r.outcome.val_loss, r.outcome.test_loss, r.outcome.test_acc, r.answered, r.sampled,
        EpsilonText(r.outcome.epsilon), r.stopped ? " (stopped)" : "");
    std::lock_guard<std::mutex> lock(status_mu);
    progress.completed_round = r.round;
    progress.stopped = r.stopped;
    progress.last_val_loss = r.outcome.val_loss;
    progress.last_epsilon = r.outcome.epsilon;
  }

  void Do(Finished&) {
    std::lock_guard<std::mutex> lock(status_mu);
    progress.finished = true;
  }

  void Handle(Event& event) {
    auto now = Clock::now();
    if (auto* in = std::get_if<InboundEvent>(&event)) {
      HandleInbound(*in, now);
    } else if (auto* reply = std::get_if<ReplyEvent>(&event)) {
      Result<Message> decoded = reply->frames.ok() ? Decode(*reply->frames, decode_options)
                                                   : Result<Message>(reply->frames.status());
      if (decoded.ok() && observer) observer(*decoded);
      Execute(machine->OnReply(reply->request_id, decoded, now));
    } else if (auto* result = std::get_if<LearnerResult>(&event)) {
      if (auto* round = std::get_if<RoundDone>(result)) learner_state = round->state;
      Execute(DeliverResult(*machine, *result, now));
    }
    if (recorder) (void)recorder->FollowExchanges(*machine);
  }

  void HandleInbound(InboundEvent& in, Clock::time_point now) {
    InboundId id = ++last_inbound;
    tokens[id] = in.request.token;
    const std::vector<Frame>& frames = in.request.frames;
    Result<Message> decoded = Decode(frames, decode_options);
    if (decoded.ok()) {
      if (observer) observer(*decoded);
      Execute(machine->OnInbound(id, *decoded, now, in.request.peer_public_key));
      return;
    }
    // Address the Error with whatever of the envelope decoded, so the requester matches it.
    EnvelopeAddress address =
        frames.empty() ? EnvelopeAddress{} : AddressOf(frames[0], decode_options.limits);
    Execute(
        machine->OnInboundRejected(id, address.sender, address.request_id, decoded.status(), now));
  }

  // Says Goodbye to the peers (`reason`) and handles events until they answered or their
  // deadlines (at most 2 s) passed.
  void Leave(const std::string& reason) {
    Execute(machine->Leave(reason, Clock::now()));
    // The transport answers every request by its deadline; the bound is only a safety net.
    auto until = Clock::now() + std::chrono::seconds(5);
    while (machine->GoodbyesOutstanding() && Clock::now() < until) {
      std::deque<Event> batch;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, kTickInterval, [&] { return !events.empty(); });
        batch.swap(events);
      }
      for (Event& event : batch) Handle(event);
    }
  }

  void RefreshStatus() {
    NodeStatus status = TakeNodeStatus(
        *machine, transport->Stats(), config.id, transport->bound_endpoint(), config.rounds,
        std::string(NameOf(similarity::MetricKindNames(), config.metric)), Clock::now());
    {
      std::lock_guard<std::mutex> lock(status_mu);
      status.val_loss = progress.completed_round >= 0 ? progress.last_val_loss : NAN;
      status.epsilon = progress.completed_round >= 0 ? progress.last_epsilon : NAN;
    }
    if (http) {
      status.http_requests = http->requests();
      status.http_cpu_s = http->cpu_seconds();
    }
    std::string json = node::StatusJson(status);
    std::string metrics = node::MetricsText(status);
    std::lock_guard<std::mutex> lock(status_mu);
    status_json = std::move(json);
    metrics_text = std::move(metrics);
    status_snapshot = std::move(status);
  }

  // Logs connections the ZAP handler refused since the last such line, at most once a minute.
  void LogRefusedHandshakes(Clock::time_point now) {
    uint64_t refused = transport->Stats().handshakes_refused;
    if (refused == refused_logged ||
        (last_refused_log && now - *last_refused_log < std::chrono::minutes(1))) {
      return;
    }
    log->warn(
        "refused {} connection attempt(s) whose CURVE key is not on the allowlist ({} in total; "
        "logged at most once a minute)",
        refused - refused_logged, refused);
    refused_logged = refused;
    last_refused_log = now;
  }

  // Resumes from the checkpoint in the output folder when there is one; the round resumed after
  // (-1 without a checkpoint).
  Result<int64_t> ResumeFromCheckpoint() {
    std::string path = config.output_dir + "/checkpoint.bin";
    identity = IdentityOf(config);
    auto checkpoint = ReadCheckpointOfRun(path, identity);
    if (!checkpoint.ok()) {
      if (checkpoint.status().code() == ErrorCode::kNotFound) return int64_t{-1};
      return checkpoint.status();
    }
    if (!checkpoint->identity) {
      log->warn(
          "{} is in checkpoint format 1, which records neither the run it belongs to nor a "
          "checksum: resuming from it unchecked (the next checkpoint is written in format 2)",
          path);
    }
    MESHLEARN_RETURN_IF_ERROR(learner->Restore(checkpoint->learner));
    const LearnerState& l = checkpoint->learner;
    FloatArray served = FloatArray::Own(checkpoint->stopped ? l.best_weights : l.weights);
    MESHLEARN_RETURN_IF_ERROR(
        machine->Resume(checkpoint->machine, std::move(served), checkpoint->stopped));
    learner_state = checkpoint->learner;
    log->info("found checkpoint of round {} in {}", checkpoint->round, path);
    return checkpoint->round;
  }

  void LogStart(const std::optional<NodeKeys>& keys) {
    log->info("listening on {}; model {} ({} parameters), {} training samples",
              transport->bound_endpoint(), learner->ArchitectureId(),
              learner->Layout().total_floats(), learner->TrainSize());
    for (const PeerAddress& peer : config.peers) {
      // Rationale: ZeroMQ retries an address that does not resolve in silence, for ever.
      if (Status resolved = ResolveTcpEndpoint(peer.endpoint); !resolved.ok()) {
        log->warn("peer {} cannot be reached: {} (check its [[peers]] address)", peer.id,
                  resolved.message());
      }
    }
    if (keys) {
      log->info("traffic is encrypted (CURVE); public key {}; {} keys on the allowlist",
                keys->public_key, keys->allowed_keys.size());
      size_t unbound = keys->allowed_keys.size() - keys->key_ids.size();
      if (unbound > 0) {
        log->warn(
            "{} allowlisted key(s) are bound to no node id: a peer holding one may claim any id "
            "(bind a key with an allowlist line \"<key> <node id>\"; meshlearn-keygen --id)",
            unbound);
      }
    } else {
      log->warn(
          "traffic is unencrypted and unauthenticated: any host that reaches {} can talk to "
          "this node (configure [security], see configs/README.md)",
          transport->bound_endpoint());
    }
    if (config.attack != AttackKind::kNone) {
      log->warn("[attack] kind = {}: this node serves poisoned models (robustness experiment)",
                NameOf(AttackKindNames(), config.attack));
    }
  }
};

Result<std::unique_ptr<Node>> Node::Create(const NodeConfig& config, NodeOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->observer = std::move(options.observer);
  impl->log =
      options.logger ? std::move(options.logger) : MakeNodeLogger(config.id, config.log_level);

  // Keys first: a node with a missing or bad key file must not start at all.
  std::optional<NodeKeys> keys;
  if (config.security) {
    auto loaded = LoadNodeKeys(config);
    if (!loaded.ok()) return loaded.status();
    keys = std::move(*loaded);
  }

  if (options.learner) {
    impl->learner = std::move(options.learner);
  } else {
    auto learner = CreateLearner(config);
    if (!learner.ok()) return learner.status();
    impl->learner = std::move(*learner);
  }

  auto sampler = topology::MakePeerSampler(SamplerConfigOf(config));
  if (!sampler.ok()) return sampler.status().WithContext("[learning]");

  // Bind before anything else talks to peers; the Hello carries the bound endpoint.
  TransportOptions transport_options;
  transport_options.node_id = config.id;
  transport_options.listen_endpoint = config.listen;
  transport_options.limits.max_message_bytes = config.max_message_bytes;
  // Idle connections close after a second: a node meets many peers by gossip but talks to a few
  // per round, and every open connection holds descriptors at both ends.
  transport_options.idle_connection_timeout = std::chrono::seconds(1);
  if (keys) {
    transport_options.curve = CurveOptions{keys->public_key, keys->secret_key, keys->allowed_keys};
  }
  TransportFactory start_transport =
      options.transport ? std::move(options.transport) : TransportFactory(StartZmqTransport);
  Impl* raw = impl.get();
  auto transport = start_transport(transport_options, [raw](InboundRequest request) {
    raw->Push(InboundEvent{std::move(request)});
  });
  if (!transport.ok()) return transport.status().WithContext("listen");
  impl->transport = std::move(*transport);
  impl->decode_options.limits.max_message_bytes = config.max_message_bytes;
  impl->decode_options.expected_layout = &impl->learner->Layout();

  impl->machine = std::make_unique<NodeStateMachine>(
      MachineConfigOf(
          config, *impl->learner,
          config.advertise.empty() ? impl->transport->bound_endpoint() : config.advertise, keys,
          std::random_device{}()),
      std::move(*sampler), impl->log);

  auto resumed = impl->ResumeFromCheckpoint();
  if (!resumed.ok()) return resumed.status();
  auto outputs = NodeOutputs::Open(config.output_dir, *resumed, impl->log);
  if (!outputs.ok()) return outputs.status();
  impl->recorder.emplace(std::move(*outputs), config.emd_enabled);

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
  impl->LogStart(keys);
  return std::unique_ptr<Node>(new Node(std::move(impl)));
}

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Node::~Node() {
  Stop();
  impl_->worker.reset();
  impl_->http.reset();
  impl_->transport.reset();
}

Status Node::Run() {
  Impl& s = *impl_;
  s.worker = std::make_unique<LearnerWorker>(
      *s.learner, [&s](LearnerResult result) { s.Push(std::move(result)); });
  s.Execute(s.machine->Start(Clock::now()));
  auto last_status = Clock::now();
  bool stopped = false;
  for (;;) {
    std::deque<Event> batch;
    {
      std::unique_lock<std::mutex> lock(s.mu);
      s.cv.wait_for(lock, kTickInterval, [&] { return !s.events.empty() || s.stop_requested; });
      stopped = s.stop_requested;
      if (stopped) break;
      batch.swap(s.events);
    }
    for (Event& event : batch) s.Handle(event);
    auto now = Clock::now();
    s.Execute(s.machine->OnTick(now));
    // The status documents are rebuilt at most twice a second: with 100 peers each rebuild
    // formats a few kB, and 100 in-process nodes ticking every 50 ms would spend the CPU on it.
    if (now - last_status >= std::chrono::milliseconds(500) || s.machine->finished()) {
      s.RefreshStatus();
      s.LogRefusedHandshakes(now);
      last_status = now;
    }
    if (!s.failure.ok() || s.machine->finished()) break;
  }
  s.worker->Stop();  // an ongoing local training finishes; its round is not recorded
  s.Leave(stopped ? "stopped" : s.failure.ok() ? "finished its rounds" : "failed");
  if (s.machine->counters().peers_reached == 0) {
    s.log->warn(
        "stopped after round {} {}: none answered our Hello (check the [[peers]] addresses, and "
        "that the peers run and allow our key)",
        s.machine->completed_round(), kNeverReachedAPeer);
  } else {
    s.log->info("stopped after round {}", s.machine->completed_round());
  }
  return s.failure;
}

void Node::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop_requested = true;
  }
  impl_->cv.notify_all();
}

const std::string& Node::endpoint() const { return impl_->transport->bound_endpoint(); }
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
