// The state machine's settings, built by the config sections that own them (node/config/config.h).

#include <chrono>

#include "base/stable_hash.h"
#include "node/config/config.h"
#include "node/logic/emd_exchange.h"

namespace meshlearn::node {
namespace {

Clock::duration DurationOf(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

topology::SamplerConfig LearningSection::Sampler(const std::string& self,
                                                 std::vector<std::string> members) const {
  topology::SamplerConfig config;
  config.graph = graph;
  config.members = std::move(members);
  config.edges = edges;
  config.sampler = sampler;
  config.self = self;
  config.dac = {tau,     unscored,    tau_schedule, normalize,
                two_hop, two_hop_row, two_hop_cap,  explore_rounds};
  config.clusters = clusters;
  return config;
}

Clock::duration RoundSection::Deadline() const { return DurationOf(round_deadline_s); }

RoundConfig RoundSection::Driver(const LearningSection& learning,
                                 const TrainingSection& training) const {
  RoundConfig r;
  r.peers_per_round = learning.peers_per_round;
  r.sync = sync;
  r.resting = resting;
  r.fetch_updates = learning.ClusterPolicy().has_value();
  r.round_deadline = Deadline();
  r.rounds = training.rounds;
  r.linger = DurationOf(linger_s);
  r.exchange_linger = EmdExchange::LingerLimit(Deadline());
  r.min_round = DurationOf(min_round_s);
  return r;
}

uint16_t RoundSection::ProtocolVersion() const {
  return max_protocol_version == 0 ? kProtocolVersion : static_cast<uint16_t>(max_protocol_version);
}

ServingConfig RoundSection::Serving(const ParamLayout& layout, uint64_t train_size) const {
  ServingConfig serving;
  serving.layout = layout;
  serving.train_size = train_size;
  serving.hold_limit = Deadline();
  return serving;
}

EmdExchangeConfig EmdSection::Exchange(const LearningSection& learning, const RoundSection& round,
                                       const ParamLayout& layout, uint64_t nonce) const {
  EmdExchangeConfig e;
  e.enabled = enabled;
  e.epsilon = epsilon;
  e.max_samples = static_cast<uint32_t>(max_samples);
  e.refresh = refresh;
  e.peers_per_round = peers_per_round;
  e.cluster_sampler = learning.sampler == topology::SamplerKind::kEmdCluster;
  e.metric = learning.metric == similarity::MetricKind::kEmd;
  e.witness = witness;
  e.layout = layout;
  e.nonce = nonce;
  e.round_deadline = round.Deadline();
  return e;
}

SignatureConfig SignatureSection::Exchange(const LearningSection& learning,
                                           const RoundSection& round,
                                           const ProjectedEmbeddings& own) const {
  SignatureConfig s;
  s.enabled = learning.UsesSignatures();
  s.own = own;
  s.threshold = threshold;
  s.metric = learning.metric == similarity::MetricKind::kCentroid;
  s.cluster_sampler = learning.sampler == topology::SamplerKind::kCentroidCluster;
  s.request_deadline = round.Deadline();
  return s;
}

MembershipConfig NodeConfig::Membership(const Learner& learner, const NodeFacts& facts) const {
  MembershipConfig m;
  m.listen_endpoint = facts.endpoint;
  m.architecture_id = learner.ArchitectureId();
  m.metric = std::string(NameOf(similarity::MetricKindNames(), learning.metric));
  m.nonce = facts.nonce;
  m.hello_deadline = round.Deadline();
  m.dead_after_failures = round.dead_after_failures;
  m.dead_backoff = round.Deadline();
  m.initial_peers = peers;
  m.mesh_size = mesh_size;
  m.max_candidates_per_source = static_cast<size_t>(round.max_candidates_per_source);
  m.view_size = static_cast<size_t>(round.view_size);
  m.shuffle_length = static_cast<size_t>(round.shuffle_length);
  m.view_seed = StableHash(id, seed);
  if (attack.kind == AttackKind::kSybil) {
    m.sybils = SybilIdentities(id, facts.endpoint, attack.sybils, attack.sybil_address);
  }
  if (facts.keys) {
    m.public_key = facts.keys->public_key;
    m.allowed_keys.emplace(facts.keys->allowed_keys.begin(), facts.keys->allowed_keys.end());
    m.key_ids = facts.keys->key_ids;
  }
  return m;
}

StateMachineConfig NodeConfig::Machine(const Learner& learner, const NodeFacts& facts) const {
  StateMachineConfig c;
  c.id = id;
  c.seed = seed;
  c.membership = Membership(learner, facts);
  c.protocol_version = round.ProtocolVersion();
  c.serving = round.Serving(learner.Layout(), learner.TrainSize());
  c.serving.compression = compression.Settings();
  c.rounds = round.Driver(learning, training);
  if (attack.kind == AttackKind::kScoreLie) c.rounds.score_lie_allies = attack.allies;
  // On a fixed graph every neighbour is drawn: the sampler gives the others p = 0.
  if (learning.graph != topology::GraphKind::kNone) c.rounds.peers_per_round = peers.size();
  if (c.protocol_version >= kCompressedModelVersion &&
      (compression.codec == CompressionCodec::kTopK || compression.peer_estimates > 0)) {
    // Top-k lineages start at the shared initial model: the learner has neither trained nor
    // restored a checkpoint yet, so its weights are still that model.
    FloatArray initial = FloatArray::Own(learner.Snapshot().weights);
    c.serving.shared_initial = initial;
    c.rounds.shared_initial = initial;
    c.rounds.peer_estimates = static_cast<size_t>(compression.peer_estimates);
  }
  if (compression.codec == CompressionCodec::kTopK) {
    c.rounds.consensus_step = compression.consensus_step;
  }
  c.emd = emd.Exchange(learning, round, learner.Layout(), facts.nonce);
  c.emd.embeddings = compression.EmbeddingSettings();
  c.signatures = signature.Exchange(learning, round, learner.DataSignature());
  return c;
}

}  // namespace meshlearn::node
