#include "node/node.h"

#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <variant>

#include "node/checkpoint.h"
#include "node/http_status.h"
#include "node/learner.h"
#include "node/logging.h"
#include "node/outputs.h"
#include "node/state_machine.h"
#include "node/transport.h"
#include "protocol/codec.h"
#include "similarity/cluster_policy.h"

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
struct ComputeEvent {
  Result<RoundOutcome> outcome;
  LearnerState state;
};
// A learner job of the EMD exchange and its result.
template <class JobType, class ResultType>
struct JobDone {
  JobType job;
  Result<ResultType> result;
};
using EmbedEvent = JobDone<EmbedJob, ProjectedEmbeddings>;
using EmdEvent = JobDone<EmdJob, EmdMeasure>;
using OwnProjectionEvent = JobDone<OwnProjectionJob, OwnProjection>;
using WitnessEmdEvent = JobDone<WitnessEmdJob, double>;
using Event = std::variant<InboundEvent, ReplyEvent, ComputeEvent, EmbedEvent, EmdEvent,
                           OwnProjectionEvent, WitnessEmdEvent>;
using Job = std::variant<RoundJob, EmbedJob, EmdJob, OwnProjectionJob, WitnessEmdJob>;

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

// Prometheus label values escape backslash, quote and newline.
std::string LabelValue(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

class Node::Impl {
 public:
  NodeConfig config;
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<Learner> learner;
  std::unique_ptr<NodeStateMachine> machine;
  std::unique_ptr<Transport> transport;
  std::optional<NodeOutputs> outputs;
  std::unique_ptr<HttpStatusServer> http;
  DecodeOptions decode_options;
  LearnerState learner_state;  // the state after the last computed round, for checkpoints

  // Events from the transport and the worker, consumed by the event thread.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> events;
  bool stop_requested = false;

  // The worker thread and its job queue (one round job at a time, plus EMD exchange jobs).
  std::thread worker;
  std::mutex worker_mu;
  std::condition_variable worker_cv;
  std::deque<Job> jobs;
  bool worker_exit = false;

  std::map<InboundId, ReplyToken> tokens;   // event thread only
  uint64_t written_emd_revision = 0;        // the machine's emd_revision() in emd.csv
  uint64_t written_signature_revision = 0;  // the machine's signature_revision() in signature.csv
  MessageObserver observer;                 // sees every decoded received message
  InboundId last_inbound = 0;
  Status failure;  // a failure of the node itself, ends Run()

  mutable std::mutex status_mu;
  std::string status_json = "{}";
  std::string metrics_text;
  NodeProgress progress;

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

  void WorkerLoop() {
    for (;;) {
      Job next;
      {
        std::unique_lock<std::mutex> lock(worker_mu);
        worker_cv.wait(lock, [&] { return !jobs.empty() || worker_exit; });
        if (worker_exit) return;
        next = std::move(jobs.front());
        jobs.pop_front();
      }
      if (auto* round = std::get_if<RoundJob>(&next)) {
        Result<RoundOutcome> outcome = learner->RunRound(*round);
        Push(ComputeEvent{std::move(outcome), learner->Snapshot()});
      } else if (auto* embed = std::get_if<EmbedJob>(&next)) {
        auto result = learner->EmbedForPeer(embed->weights.view(), embed->projection_seed,
                                            embed->max_samples);
        Push(EmbedEvent{std::move(*embed), std::move(result)});
      } else if (auto* emd = std::get_if<EmdJob>(&next)) {
        auto result =
            learner->MeasureEmd(emd->peer_validation, emd->projection_seed, emd->max_samples);
        Push(EmdEvent{std::move(*emd), std::move(result)});
      } else if (auto* own = std::get_if<OwnProjectionJob>(&next)) {
        auto result = learner->ProjectOwnTrain(own->projection_seed, own->max_samples);
        Push(OwnProjectionEvent{std::move(*own), std::move(result)});
      } else if (auto* witness = std::get_if<WitnessEmdJob>(&next)) {
        auto result = learner->WitnessDistance(witness->train, witness->validation);
        Push(WitnessEmdEvent{std::move(*witness), std::move(result)});
      }
    }
  }

  void Enqueue(Job job) {
    {
      std::lock_guard<std::mutex> lock(worker_mu);
      jobs.push_back(std::move(job));
    }
    worker_cv.notify_one();
  }

  void Execute(std::vector<Action> actions) {
    for (Action& action : actions) {
      std::visit([&](auto& a) { Do(a); }, action);
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

  void Do(StartCompute& a) { Enqueue(std::move(a.job)); }
  void Do(StartEmbed& a) { Enqueue(std::move(a.job)); }
  void Do(StartEmd& a) { Enqueue(std::move(a.job)); }
  void Do(StartOwnProjection& a) { Enqueue(std::move(a.job)); }
  void Do(StartWitnessEmd& a) { Enqueue(std::move(a.job)); }

  void Do(RoundCompleted& a) {
    const RoundRecord& r = a.record;
    TransportStats stats = transport->Stats();
    Status written = outputs->AppendRound(r, stats.bytes_in, stats.bytes_out);
    if (written.ok()) {
      written = outputs->WriteCommAndScores(machine->comm().Rows(), machine->sampler().Records());
    }
    if (written.ok() && config.emd_enabled) {
      written = outputs->WriteEmd(machine->EmdRows());
      written_emd_revision = machine->emd_revision();
    }
    if (written.ok()) written = WriteSignaturesIfChanged();
    if (written.ok() && !r.outcome.cluster_partition.empty()) {
      written = outputs->WriteCluster(r.outcome.cluster_partition, r.round);
    }
    if (written.ok()) {
      Checkpoint checkpoint;
      checkpoint.round = r.round;
      checkpoint.stopped = r.stopped;
      checkpoint.learner = learner_state;
      checkpoint.machine = machine->ExportState();
      written = WriteCheckpoint(outputs->CheckpointPath(), checkpoint);
    }
    if (!written.ok()) {
      log->error("cannot write outputs of round {}: {}", r.round, written.ToString());
      failure = written;
    }
    log->info(
        "round {} done: val_loss {:.4f} test_loss {:.4f} test_acc {:.4f}, {} of {} peers "
        "answered{}",
        r.round, r.outcome.val_loss, r.outcome.test_loss, r.outcome.test_acc, r.answered, r.sampled,
        r.stopped ? " (early-stopped)" : "");
    std::lock_guard<std::mutex> lock(status_mu);
    progress.completed_round = r.round;
    progress.stopped = r.stopped;
    progress.last_val_loss = r.outcome.val_loss;
  }

  void Do(Finished&) {
    std::lock_guard<std::mutex> lock(status_mu);
    progress.finished = true;
  }

  void Handle(Event& event) {
    auto now = Clock::now();
    if (auto* in = std::get_if<InboundEvent>(&event)) {
      InboundId id = ++last_inbound;
      tokens[id] = in->request.token;
      const std::vector<Frame>& frames = in->request.frames;
      Result<Message> decoded = Decode(frames, decode_options);
      auto* hello = decoded.ok() ? std::get_if<Hello>(&decoded->body) : nullptr;
      if (hello && !in->request.peer_public_key.empty()) {
        // With CURVE a peer is known by the key it proved in the handshake, not the one it claims.
        hello->public_key = in->request.peer_public_key;
      }
      if (decoded.ok()) {
        if (observer) observer(*decoded);
        Execute(machine->OnInbound(id, *decoded, now));
      } else {
        // Address the Error with whatever of the envelope decoded, so the requester matches it.
        Result<Envelope> envelope = frames.empty()
                                        ? Result<Envelope>(Status::Malformed("empty"))
                                        : DecodeEnvelope(frames[0], decode_options.limits);
        Execute(machine->OnInboundRejected(id, envelope.ok() ? envelope->sender : "",
                                           envelope.ok() ? envelope->request_id : 0,
                                           decoded.status(), now));
      }
    } else if (auto* reply = std::get_if<ReplyEvent>(&event)) {
      Result<Message> decoded = reply->frames.ok() ? Decode(*reply->frames, decode_options)
                                                   : Result<Message>(reply->frames.status());
      if (decoded.ok() && observer) observer(*decoded);
      Execute(machine->OnReply(reply->request_id, decoded, now));
    } else if (auto* done = std::get_if<ComputeEvent>(&event)) {
      learner_state = std::move(done->state);
      Execute(machine->OnComputeDone(done->outcome, now));
    } else if (auto* embed = std::get_if<EmbedEvent>(&event)) {
      Execute(machine->OnEmbedDone(embed->job, embed->result, now));
    } else if (auto* emd = std::get_if<EmdEvent>(&event)) {
      Execute(machine->OnEmdDone(emd->job, emd->result, now));
    } else if (auto* own = std::get_if<OwnProjectionEvent>(&event)) {
      Execute(machine->OnOwnProjectionDone(own->job, own->result, now));
    } else if (auto* witness = std::get_if<WitnessEmdEvent>(&event)) {
      Execute(machine->OnWitnessEmdDone(witness->job, witness->result, now));
    }
    // emd.csv follows every change of the exchange (a measurement may finish after the rounds).
    if (outputs && config.emd_enabled && machine->emd_revision() != written_emd_revision) {
      written_emd_revision = machine->emd_revision();
      (void)outputs->WriteEmd(machine->EmdRows());
    }
    (void)WriteSignaturesIfChanged();
  }

  // signature.csv follows every signature received (FLT).
  Status WriteSignaturesIfChanged() {
    if (!outputs || machine->signature_revision() == written_signature_revision) {
      return Status::Ok();
    }
    written_signature_revision = machine->signature_revision();
    return outputs->WriteSignatures(machine->SignatureRows());
  }

  void RefreshStatus() {
    auto now = Clock::now();
    const topology::PeerSampler& sampler = machine->sampler();
    const MachineCounters& c = machine->counters();
    TransportStats t = transport->Stats();
    std::ostringstream json;
    json << "{\"id\":" << JsonString(config.id)
         << ",\"endpoint\":" << JsonString(transport->bound_endpoint())
         << ",\"round\":" << machine->completed_round() << ",\"rounds\":" << config.rounds
         << ",\"metric\":" << JsonString(config.metric)
         << ",\"sampler\":" << JsonString(std::string(sampler.Name())) << ",\"peers\":[";
    bool first = true;
    for (const topology::PeerEntry& p : machine->peers().Entries()) {
      const topology::PeerRecord* r = sampler.Find(p.id);
      json << (first ? "" : ",") << "{\"id\":" << JsonString(p.id)
           << ",\"endpoint\":" << JsonString(p.endpoint) << ",\"liveness\":\""
           << topology::LivenessName(machine->peers().LivenessOf(p.id, now))
           << "\",\"score\":" << (r && r->score ? JsonNumber(*r->score) : "null")
           << ",\"probability\":" << JsonNumber(r ? r->probability : 0)
           << ",\"times_sampled\":" << machine->comm().TimesSampled(p.id)
           << ",\"answered\":" << machine->comm().TimesAnswered(p.id) << "}";
      first = false;
    }
    json << "],\"counters\":{\"rejected_inbound\":" << c.rejected_inbound
         << ",\"rejected_replies\":" << c.rejected_replies
         << ",\"missed_deadlines\":" << c.missed_deadlines
         << ",\"refused_peers\":" << c.refused_peers
         << ",\"held_requests_expired\":" << c.held_requests_expired
         << ",\"merge_excluded\":" << c.merge_excluded << ",\"bytes_in\":" << t.bytes_in
         << ",\"bytes_out\":" << t.bytes_out << ",\"timeouts\":" << t.timeouts
         << ",\"transport_rejected\":" << t.inbound_rejected
         << ",\"handshakes_refused\":" << t.handshakes_refused << ",\"rejected_by_code\":{";
    first = true;
    for (const auto& [code, n] : c.rejected_by_code) {
      json << (first ? "" : ",") << JsonString(code) << ":" << n;
      first = false;
    }
    json << "}}}";

    std::string node = "node=\"" + LabelValue(config.id) + "\"";
    std::ostringstream m;
    auto metric = [&](const char* name, const char* type, const char* help) {
      m << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    };
    metric("meshlearn_round", "gauge", "Last completed round.");
    m << "meshlearn_round{" << node << "} " << machine->completed_round() << "\n";
    metric("meshlearn_bytes_in_total", "counter", "Bytes received.");
    m << "meshlearn_bytes_in_total{" << node << "} " << t.bytes_in << "\n";
    metric("meshlearn_bytes_out_total", "counter", "Bytes sent.");
    m << "meshlearn_bytes_out_total{" << node << "} " << t.bytes_out << "\n";
    metric("meshlearn_handshakes_refused_total", "counter",
           "Connections refused because their CURVE key is not on the allowlist.");
    m << "meshlearn_handshakes_refused_total{" << node << "} " << t.handshakes_refused << "\n";
    metric("meshlearn_missed_deadlines_total", "counter", "Sampled peers that did not answer.");
    m << "meshlearn_missed_deadlines_total{" << node << "} " << c.missed_deadlines << "\n";
    metric("meshlearn_rejected_messages_total", "counter", "Peer messages rejected, by code.");
    m << "meshlearn_rejected_messages_total{" << node << ",code=\"all\"} " << c.rejected_inbound
      << "\n";
    for (const auto& [code, n] : c.rejected_by_code) {
      m << "meshlearn_rejected_messages_total{" << node << ",code=\"" << code << "\"} " << n
        << "\n";
    }
    metric("meshlearn_peer_probability", "gauge", "Sampling probability of each peer.");
    for (const topology::PeerRecord& r : sampler.Records()) {
      m << "meshlearn_peer_probability{" << node << ",peer=\"" << LabelValue(r.peer) << "\"} "
        << JsonNumber(r.probability) << "\n";
    }
    std::lock_guard<std::mutex> lock(status_mu);
    status_json = json.str();
    metrics_text = m.str();
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
  uint64_t refused_logged = 0;
  std::optional<Clock::time_point> last_refused_log;
};

Result<std::unique_ptr<Node>> Node::Create(const NodeConfig& config,
                                           std::shared_ptr<spdlog::logger> logger,
                                           MessageObserver observer) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->observer = std::move(observer);
  if (!logger) {
    auto level = ParseLogLevel(config.log_level);
    if (!level.ok()) return level.status();
    logger = MakeNodeLogger(config.id, *level);
  }
  impl->log = logger;

  // Keys first: a node with a missing or bad key file must not start at all.
  std::optional<NodeKeys> keys;
  if (config.security) {
    auto loaded = LoadNodeKeys(config);
    if (!loaded.ok()) return loaded.status();
    keys = std::move(*loaded);
  }

  auto learner = CreateLearner(config);
  if (!learner.ok()) return learner.status();
  impl->learner = std::move(*learner);

  topology::SamplerConfig sampler_config;
  sampler_config.sampler = config.sampler;
  sampler_config.self = config.id;
  sampler_config.tau = config.tau;
  sampler_config.unscored = config.unscored;
  sampler_config.tau_schedule = config.tau_schedule;
  sampler_config.normalize = config.normalize;
  sampler_config.two_hop = config.two_hop;
  sampler_config.clusters = config.clusters;
  auto sampler = topology::MakePeerSampler(sampler_config);
  if (!sampler.ok()) return sampler.status().WithContext("[learning]");

  // Bind before anything else talks to peers; the Hello carries the bound endpoint.
  TransportOptions transport_options;
  transport_options.node_id = config.id;
  transport_options.listen_endpoint = config.listen;
  transport_options.limits.max_message_bytes = config.max_message_bytes;
  // Idle connections close after a second: a node meets many peers by gossip but talks to a few
  // per round, and every open connection holds descriptors at both ends.
  transport_options.idle_connection_timeout = std::chrono::seconds(1);
  if (keys)
    transport_options.curve = CurveOptions{keys->public_key, keys->secret_key, keys->allowed_keys};
  Impl* raw = impl.get();
  auto transport = Transport::Start(transport_options, [raw](InboundRequest request) {
    raw->Push(InboundEvent{std::move(request)});
  });
  if (!transport.ok()) return transport.status().WithContext("listen");
  impl->transport = std::move(*transport);
  impl->decode_options.limits.max_message_bytes = config.max_message_bytes;
  impl->decode_options.expected_layout = &impl->learner->Layout();

  StateMachineConfig machine_config;
  machine_config.id = config.id;
  machine_config.listen_endpoint = impl->transport->bound_endpoint();
  machine_config.architecture_id = impl->learner->ArchitectureId();
  machine_config.metric = config.metric;
  machine_config.layout = impl->learner->Layout();
  machine_config.train_size = impl->learner->TrainSize();
  machine_config.peers_per_round = config.peers_per_round;
  machine_config.sync = config.sync;
  machine_config.fetch_updates = similarity::IsClusterPolicy(config.sampler);
  machine_config.round_deadline = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(config.round_deadline_s));
  machine_config.rounds = config.rounds;
  machine_config.linger =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config.linger_s));
  machine_config.min_round = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(config.min_round_s));
  machine_config.dead_after_failures = config.dead_after_failures;
  machine_config.seed = config.seed;
  machine_config.nonce = std::random_device{}();
  machine_config.initial_peers = config.peers;
  if (keys) {
    machine_config.public_key = keys->public_key;
    machine_config.allowed_keys.emplace(keys->allowed_keys.begin(), keys->allowed_keys.end());
  }
  machine_config.emd_enabled = config.emd_enabled;
  machine_config.emd_epsilon = config.emd_epsilon;
  machine_config.emd_max_samples = static_cast<uint32_t>(config.emd_max_samples);
  machine_config.emd_refresh = config.emd_refresh;
  machine_config.emd_peers_per_round = config.emd_peers_per_round;
  machine_config.emd_cluster_sampler = config.sampler == "emd_cluster";
  machine_config.emd_metric = config.metric == "emd";
  machine_config.emd_witness = config.emd_witness;
  machine_config.signatures_enabled = config.UsesSignatures();
  machine_config.own_signature = impl->learner->DataSignature();
  machine_config.signature_threshold = config.signature_threshold;
  machine_config.signature_metric = config.metric == "centroid";
  machine_config.signature_cluster_sampler = config.sampler == "centroid_cluster";
  impl->machine =
      std::make_unique<NodeStateMachine>(machine_config, std::move(*sampler), impl->log);

  // Resume from the checkpoint when there is one.
  std::string checkpoint_path = config.output_dir + "/checkpoint.bin";
  int64_t resume_round = -1;
  auto checkpoint = ReadCheckpoint(checkpoint_path);
  if (checkpoint.ok()) {
    MESHLEARN_RETURN_IF_ERROR(impl->learner->Restore(checkpoint->learner));
    const LearnerState& l = checkpoint->learner;
    FloatArray served = FloatArray::Own(checkpoint->stopped ? l.best_weights : l.weights);
    MESHLEARN_RETURN_IF_ERROR(
        impl->machine->Resume(checkpoint->machine, std::move(served), checkpoint->stopped));
    impl->learner_state = checkpoint->learner;
    resume_round = checkpoint->round;
    impl->log->info("found checkpoint of round {} in {}", resume_round, checkpoint_path);
  } else if (checkpoint.status().code() != ErrorCode::kNotFound) {
    return checkpoint.status();
  }
  auto outputs = NodeOutputs::Open(config.output_dir, resume_round);
  if (!outputs.ok()) return outputs.status();
  impl->outputs = std::move(*outputs);

  if (config.http_port) {
    auto http = HttpStatusServer::Start(
        config.http_bind, *config.http_port, [raw] { return raw->Locked(raw->status_json); },
        [raw] { return raw->Locked(raw->metrics_text); });
    if (!http.ok()) return http.status().WithContext("http_port");
    impl->http = std::move(*http);
  }
  impl->RefreshStatus();
  impl->log->info("listening on {}; model {} ({} parameters), {} training samples",
                  impl->transport->bound_endpoint(), impl->learner->ArchitectureId(),
                  impl->learner->Layout().total_floats(), impl->learner->TrainSize());
  if (keys) {
    impl->log->info("traffic is encrypted (CURVE); public key {}; {} keys on the allowlist",
                    keys->public_key, keys->allowed_keys.size());
  } else {
    impl->log->warn(
        "traffic is unencrypted and unauthenticated: any host that reaches {} can talk to this "
        "node (configure [security], see configs/README.md)",
        impl->transport->bound_endpoint());
  }
  if (config.attack != "none") {
    impl->log->warn("[attack] kind = {}: this node serves poisoned models (robustness experiment)",
                    config.attack);
  }
  return std::unique_ptr<Node>(new Node(std::move(impl)));
}

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Node::~Node() {
  Stop();
  if (impl_->worker.joinable()) {
    {
      std::lock_guard<std::mutex> lock(impl_->worker_mu);
      impl_->worker_exit = true;
    }
    impl_->worker_cv.notify_one();
    impl_->worker.join();
  }
  impl_->http.reset();
  impl_->transport.reset();
}

Status Node::Run() {
  Impl& s = *impl_;
  s.worker = std::thread([&s] { s.WorkerLoop(); });
  s.Execute(s.machine->Start(Clock::now()));
  auto last_status = Clock::now();
  for (;;) {
    std::deque<Event> batch;
    {
      std::unique_lock<std::mutex> lock(s.mu);
      s.cv.wait_for(lock, kTickInterval, [&] { return !s.events.empty() || s.stop_requested; });
      if (s.stop_requested) break;
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
  {
    std::lock_guard<std::mutex> lock(s.worker_mu);
    s.worker_exit = true;
  }
  s.worker_cv.notify_one();
  s.worker.join();  // an ongoing local training finishes; its round is not recorded
  s.log->info("stopped after round {}", s.machine->completed_round());
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

std::string Node::MetricsText() const { return impl_->Locked(impl_->metrics_text); }

uint16_t Node::http_port() const { return impl_->http ? impl_->http->port() : 0; }

}  // namespace meshlearn::node
