#include "node/logic/membership.h"

#include <algorithm>

#include "node/transport/endpoint.h"
#include "protocol/limits.h"
#include "protocol/version.h"
#include "protocol/wire_text.h"

namespace meshlearn::node {
namespace {

constexpr auto kHelloRetryBase = std::chrono::seconds(1);
constexpr auto kHelloRetryMax = std::chrono::seconds(30);
constexpr auto kDeadBackoffMax = std::chrono::seconds(60);
constexpr auto kGoodbyeDeadlineMax = std::chrono::seconds(2);
constexpr size_t kGoodbyesInFlight = 8;
constexpr size_t kHellosPerTick = 2;
constexpr auto kMeshAskPeriod = std::chrono::seconds(1);
// Failed greetings after which a candidate that is not from the config is forgotten.
constexpr int kCandidateAttempts = 2;
// The one source of every PeerList whose sender is not a verified peer (not a valid node id).
constexpr const char kUnverifiedSource[] = "*";

}  // namespace

Membership::Membership(MembershipConfig config, NodeServices node)
    : config_(std::move(config)),
      node_(node),
      peers_(node.requests.self(), config_.dead_after_failures, config_.dead_backoff,
             kDeadBackoffMax) {
  for (const PeerAddress& p : config_.initial_peers) {
    LearnPeer(p.id, p.endpoint, p.public_key, /*pinned=*/true);
  }
  if (config_.view_size > 0) node_.sampler.SetCapacity(config_.view_size);
}

void Membership::Restore(const std::vector<PeerAddress>& peers) {
  for (const PeerAddress& p : peers) LearnPeer(p.id, p.endpoint, p.public_key, /*pinned=*/false);
}

std::vector<PeerAddress> Membership::Export() const {
  std::vector<PeerAddress> out;
  for (const topology::PeerEntry& p : peers_.Entries())
    out.push_back({p.id, p.endpoint, p.public_key});
  return out;
}

void Membership::GreetAll(TimePoint now, Actions& out) {
  for (const topology::PeerEntry& p : peers_.Entries()) {
    SendHello({p.id, p.endpoint, p.public_key}, now, out);
  }
}

Hello Membership::OwnHello() const {
  return Hello{config_.listen_endpoint, config_.architecture_id, config_.metric, config_.public_key,
               config_.nonce};
}

bool Membership::HelloOutstanding() const {
  return std::any_of(hellos_.begin(), hellos_.end(), [&](const auto& h) {
    const topology::PeerEntry* entry = peers_.Find(h.second.peer);
    return entry && entry->pinned && !hello_attempts_.count(h.second.peer);
  });
}

size_t Membership::AdmittedPeers() const { return peers_.verified(); }

bool Membership::MeshIncomplete() const {
  return config_.mesh_size > 0 && !ViewFull() &&
         AdmittedPeers() + 1 < static_cast<size_t>(config_.mesh_size);
}

bool Membership::ViewFull() const {
  return config_.view_size > 0 && peers_.verified() >= config_.view_size;
}

size_t Membership::CandidateLimit() const {
  return ViewFull() ? std::min(config_.max_candidates, config_.view_size) : config_.max_candidates;
}

size_t Membership::ViewShare() const { return (config_.view_size + 3) / 4; }

std::optional<uint64_t> Membership::NonceOf(const std::string& peer) const {
  auto it = hellos_of_.find(peer);
  if (it == hellos_of_.end()) return std::nullopt;
  return it->second.nonce;
}

const std::string& Membership::JoinProblemOf(const std::string& peer) const {
  static const std::string kNone;
  auto it = join_problems_.find(peer);
  return it == join_problems_.end() ? kNone : it->second;
}

std::optional<uint16_t> Membership::ProtocolVersionOf(const std::string& peer) const {
  auto it = hellos_of_.find(peer);
  if (it == hellos_of_.end()) return std::nullopt;
  return it->second.protocol_version;
}

void Membership::SendHello(const Greeting& greeting, TimePoint now, Actions& out) {
  for (const auto& [id, sent] : hellos_) {
    if (sent.peer == greeting.peer && sent.endpoint == greeting.endpoint) return;  // in flight
  }
  next_hello_at_.erase(greeting.peer);
  SendRequest request = node_.requests.Open(
      Part::kMembership, PeerInfo{greeting.peer, greeting.endpoint, greeting.public_key},
      OwnHello(), now + config_.hello_deadline);
  hellos_[request.request_id] = greeting;
  out.push_back(std::move(request));
}

Status Membership::CheckSender(const std::string& sender, const std::string& proven_key) const {
  if (!config_.allowed_keys || proven_key.empty()) return Status::Ok();
  auto bound = config_.key_ids.find(proven_key);
  if (bound == config_.key_ids.end() || bound->second == sender) return Status::Ok();
  return Status::UnknownSender("the connection proved the public key of node '" + bound->second +
                               "', so it cannot speak for node '" + sender + "'");
}

void Membership::OnHello(InboundId inbound, const Envelope& env, const Hello& hello, TimePoint now,
                         Actions& out) {
  auto reject = [&](Status why) {
    out.push_back(node_.requests.Reject(inbound, env.sender, env.request_id, why, now));
  };
  if (hello.architecture_id != config_.architecture_id) {
    ++counters_.refused_peers;
    std::string why = "model architecture '" + hello.architecture_id + "' differs from '" +
                      config_.architecture_id + "'";
    node_.log.error("refused peer {}: its {}", env.sender, why);
    out.push_back(node_.requests.ReplyTo(inbound, env.request_id, Error{ErrorCode::kRefused, why}));
    return;
  }
  if (env.sender == node_.requests.self()) {
    return reject(Status::InvalidArgument("Hello needs a sender id other than the receiver's"));
  }
  if (config_.allowed_keys && !config_.allowed_keys->contains(hello.public_key)) {
    return reject(
        Status::UnknownSender("public key '" + hello.public_key + "' is not on the allowlist"));
  }
  if (Status bound = CheckSender(env.sender, hello.public_key); !bound.ok()) return reject(bound);
  if (std::string problem = TcpEndpointProblem(hello.listen_endpoint); !problem.empty()) {
    return reject(Status::InvalidArgument("Hello.listen_endpoint: " + problem));
  }
  HelloAck ack;
  static_cast<Hello&>(ack) = OwnHello();
  out.push_back(node_.requests.ReplyTo(inbound, env.request_id, ack));

  const topology::PeerEntry* known = peers_.Find(env.sender);
  const bool same_key = !config_.allowed_keys || (known && known->public_key == hello.public_key);
  if (known && known->active && known->endpoint == hello.listen_endpoint && same_key) {
    // A verified peer greeting from where we verified it: welcome it back at once.
    if (known->left) node_.log.info("peer {} is back ({})", env.sender, hello.listen_endpoint);
    peers_.MarkActive(env.sender);
    peers_.RecordSuccess(env.sender);
    hellos_of_[env.sender] = {hello.nonce, env.protocol_version};
    return;
  }
  Greeting greeting{env.sender, hello.listen_endpoint, hello.public_key};
  if (known && known->active) {
    SendHello(greeting, now, out);  // it claims another endpoint: greet it there first
    return;
  }
  if (!known && ViewFull() && !ViewEvictee(env.sender, "", now)) return;  // no room for it
  if (LearnPeer(env.sender, hello.listen_endpoint, hello.public_key, /*pinned=*/false) ||
      peers_.Find(env.sender)) {
    next_hello_at_[env.sender] = now;  // greeted back from OnTick, a few per tick
  }
}

void Membership::OnPeerList(InboundId inbound, const Envelope& env, const PeerList& list,
                            TimePoint now, Actions& out) {
  Learn(list.peers, SourceOf(env.sender), now);
  PeerList answer;
  if (ViewFull()) {
    const std::vector<topology::ViewMember> members = ViewMembers(now);
    answer =
        ViewList(topology::ShuffleAnswer(members, env.sender, config_.shuffle_length - 1,
                                         topology::ViewDrawKey(config_.view_seed, view_draws_++)));
  } else {
    answer.peers = KnownPeers();
  }
  out.push_back(node_.requests.ReplyTo(inbound, env.request_id, answer));
}

void Membership::OnGoodbye(InboundId inbound, const Envelope& env, const Goodbye& goodbye,
                           Actions& out) {
  out.push_back(node_.requests.ReplyTo(inbound, env.request_id, Goodbye{}));
  const topology::PeerEntry* known = peers_.Find(env.sender);
  if (!known) return;
  if (!known->active) {
    if (!known->pinned) Drop(env.sender);  // a candidate that leaves is not worth greeting
    return;
  }
  if (known->left) return;
  peers_.MarkLeft(env.sender);
  node_.log.info("peer {} left ({}); not sampled until it greets us again", env.sender,
                 Printable(goodbye.reason.empty() ? "no reason given" : goodbye.reason));
}

void Membership::OnReply(uint64_t request_id, const Result<Message>& reply, const Status& failure,
                         TimePoint now, Actions& out) {
  if (mesh_asks_.erase(request_id)) peer_lists_.insert(request_id);
  if (goodbyes_.erase(request_id)) {
    SendGoodbyes(now, out);
    return;
  }
  if (peer_lists_.erase(request_id)) {
    if (const auto* list = failure.ok() ? std::get_if<PeerList>(&reply->body) : nullptr) {
      Learn(list->peers, SourceOf(reply->envelope.sender), now);
    }
    return;
  }
  auto hello = hellos_.find(request_id);
  if (hello == hellos_.end()) return;
  Greeting greeting = std::move(hello->second);
  hellos_.erase(hello);
  const auto* ack = failure.ok() ? std::get_if<HelloAck>(&reply->body) : nullptr;
  if (ack && reply->envelope.sender != greeting.peer) {
    // Whoever listens there is not the peer we were told about (stale gossip, or a lie).
    GreetingFailed(greeting,
                   Status::Refused("its endpoint " + greeting.endpoint + " answered as node '" +
                                   reply->envelope.sender + "'"),
                   now);
    return;
  }
  if (ack && ack->architecture_id == config_.architecture_id) {
    Verify(greeting, *ack, reply->envelope.protocol_version, now);
    return;
  }
  GreetingFailed(greeting,
                 ack ? Status::Refused("its model architecture '" + ack->architecture_id +
                                       "' differs from ours '" + config_.architecture_id + "'")
                     : failure,
                 now);
}

void Membership::Verify(const Greeting& greeting, const Hello& hello, uint16_t protocol_version,
                        TimePoint now) {
  const std::string& peer = greeting.peer;
  const topology::PeerEntry* entry = peers_.Find(peer);
  const bool was_verified = entry && entry->active;
  const bool was_left = was_verified && entry->left;
  if (!was_verified && config_.view_size > 0 && ViewFull()) {
    std::optional<std::string> room =
        ViewEvictee(peer, entry ? std::string_view(entry->source) : "", now);
    if (!room) {
      node_.log.debug("not admitting peer {}: it ranks below every member of the full view", peer);
      Drop(peer);
      return;
    }
    node_.log.debug("peer {} leaves the view for peer {}", *room, peer);
    Drop(*room);
  } else if (!was_verified && peers_.verified() >= config_.max_peers) {
    std::optional<std::string> room = peers_.Replaceable(now);
    if (!room) {
      node_.log.warn("not admitting peer {}: {} verified peers, all alive, is the limit", peer,
                     config_.max_peers);
      Drop(peer);
      return;
    }
    node_.log.info("forgetting peer {} (left or dead) to make room for peer {}", *room, peer);
    Drop(*room);
  }
  // With CURVE the peer proved the key we connected with; that one is kept.
  const std::string& key = config_.allowed_keys ? greeting.public_key : hello.public_key;
  if (was_verified) {
    peers_.MoveVerified(peer, greeting.endpoint, key);
  } else {
    peers_.Learn(peer, greeting.endpoint, key);  // a candidate takes the endpoint that answered
  }
  peers_.MarkActive(peer);
  peers_.RecordSuccess(peer);
  hellos_of_[peer] = {hello.nonce, protocol_version};
  next_hello_at_.erase(peer);
  hello_attempts_.erase(peer);
  join_problems_.erase(peer);
  ReleaseSource(peer);
  if (!was_verified) peers_.ResetViewAge(peer);
  ++counters_.verifications;
  if (!node_.sampler.HasPeer(peer)) (void)node_.sampler.AddPeer(peer);
  if (!was_verified) {
    node_.log.info("peer {} joined ({})", peer, greeting.endpoint);
  } else if (was_left) {
    node_.log.info("peer {} is back ({})", peer, greeting.endpoint);
  }
}

void Membership::GreetingFailed(const Greeting& greeting, const Status& failure, TimePoint now) {
  const std::string& peer = greeting.peer;
  const topology::PeerEntry* entry = peers_.Find(peer);
  if (!entry) return;
  if (entry->active) {
    // A verified peer claimed a new endpoint that did not answer as it: keep the one we know.
    node_.log.debug("peer {} did not answer at {} ({}); keeping {}", peer, greeting.endpoint,
                    failure.ToString(), entry->endpoint);
    return;
  }
  if (failure.code() == ErrorCode::kRefused) {
    ++counters_.refused_peers;
    node_.log.error("peer {} refused: {}", peer, failure.message());
    Drop(peer);
    return;
  }
  int attempt = ++hello_attempts_[peer];
  std::string& problem = join_problems_[peer];
  const bool new_problem = problem != failure.message();
  problem = failure.message();
  if (failure.code() == ErrorCode::kInvalidArgument && address_warned_.insert(peer).second) {
    // The transport refuses an address that is invalid or does not resolve before sending.
    node_.log.warn("cannot reach peer {}: {}{}", peer, failure.message(),
                   entry->pinned ? " (check its [[peers]] address; retrying with backoff)" : "");
  } else if (entry->pinned && new_problem) {
    // A configured peer: say why the join fails, once per cause (the transport's words tell a
    // closed port, a refused key and a wrong key apart, node/transport/link_watch.h).
    node_.log.warn("cannot join peer {} at {}: {}; retrying with backoff", peer, greeting.endpoint,
                   failure.message());
  }
  node_.log.debug("Hello to {} failed ({})", peer, failure.ToString());
  if (!entry->pinned && attempt >= kCandidateAttempts) {
    Drop(peer);
    return;
  }
  auto delay = kHelloRetryBase * (1 << std::min(attempt, 5));
  next_hello_at_[peer] = now + std::min<Clock::duration>(delay, kHelloRetryMax);
}

void Membership::Gossip(TimePoint now, topology::Rng& rng, Actions& out) {
  if (ViewFull()) return Shuffle(now, out);
  std::vector<std::string> active;
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (peers_.IsSamplable(p.id, now)) active.push_back(p.id);
  }
  if (active.empty()) return;
  const std::string& target = active[rng() % active.size()];
  SendRequest request = node_.requests.Open(Part::kMembership, *peers_.Find(target),
                                            PeerList{KnownPeers()}, now + config_.hello_deadline);
  peer_lists_.insert(request.request_id);
  out.push_back(std::move(request));
}

void Membership::OnTick(TimePoint now, Actions& out) {
  std::set<std::string> greeting;  // a Hello to them is in flight: they wait for its outcome
  for (const auto& [id, sent] : hellos_) greeting.insert(sent.peer);
  std::vector<std::string> due;
  for (const auto& [peer, at] : next_hello_at_) {
    if (now < at || greeting.contains(peer)) continue;
    due.push_back(peer);
    if (due.size() == kHellosPerTick) break;
  }
  for (const std::string& peer : due) {
    const topology::PeerEntry* entry = peers_.Find(peer);
    if (!entry) {
      next_hello_at_.erase(peer);
      continue;
    }
    SendHello({peer, entry->endpoint, entry->public_key}, now, out);
  }
  if (MeshIncomplete() && now >= next_mesh_ask_at_) {
    next_mesh_ask_at_ = now + kMeshAskPeriod;
    for (const topology::PeerEntry& p : peers_.Entries()) {
      if (!p.active || p.left) continue;
      bool asking = std::any_of(mesh_asks_.begin(), mesh_asks_.end(),
                                [&](const auto& ask) { return ask.second == p.id; });
      if (asking) continue;
      SendRequest request = node_.requests.Open(Part::kMembership, p, PeerList{KnownPeers()},
                                                now + config_.hello_deadline);
      mesh_asks_[request.request_id] = p.id;
      out.push_back(std::move(request));
    }
  }
}

void Membership::Leave(const std::string& reason, TimePoint now, Actions& out) {
  if (node_.requests.protocol_version() < kGoodbyeVersion) return;  // an older node has none
  goodbye_reason_ = reason;
  goodbye_queue_.clear();
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (!p.active || p.left) continue;
    auto hello = hellos_of_.find(p.id);
    if (hello == hellos_of_.end() || hello->second.protocol_version < kGoodbyeVersion) continue;
    goodbye_queue_.push_back(p.id);
  }
  std::reverse(goodbye_queue_.begin(), goodbye_queue_.end());
  SendGoodbyes(now, out);
}

void Membership::SendGoodbyes(TimePoint now, Actions& out) {
  TimePoint deadline = now + std::min<Clock::duration>(config_.hello_deadline, kGoodbyeDeadlineMax);
  while (goodbyes_.size() < kGoodbyesInFlight && !goodbye_queue_.empty()) {
    std::string id = std::move(goodbye_queue_.back());
    goodbye_queue_.pop_back();
    const topology::PeerEntry* p = peers_.Find(id);
    if (p == nullptr || !p->active || p->left) continue;
    SendRequest request =
        node_.requests.Open(Part::kMembership, *p, Goodbye{goodbye_reason_}, deadline);
    goodbyes_.insert(request.request_id);
    out.push_back(std::move(request));
  }
}

bool Membership::KeyAllowed(const std::string& id, const std::string& public_key) const {
  if (!config_.allowed_keys) return true;
  if (!config_.allowed_keys->contains(public_key)) return false;
  auto bound = config_.key_ids.find(public_key);
  return bound == config_.key_ids.end() || bound->second == id;
}

bool Membership::LearnPeer(const std::string& id, const std::string& endpoint,
                           const std::string& public_key, bool pinned) {
  if (!KeyAllowed(id, public_key)) {
    node_.log.debug("ignored peer {} at {}: its public key '{}' is not on the allowlist for it", id,
                    endpoint, public_key);
    return false;
  }
  // Only the peer itself, by proving a new key in a handshake (Verify), changes a key we know.
  // Rationale: otherwise one allowlisted node could redirect us to itself under another's id.
  const topology::PeerEntry* known = peers_.Find(id);
  if (config_.allowed_keys && known && !known->public_key.empty() &&
      known->public_key != public_key) {
    node_.log.debug("ignored peer {} at {} with public key '{}': we know it with another key", id,
                    endpoint, public_key);
    return false;
  }
  if (!known && !pinned && peers_.size() - peers_.verified() >= CandidateLimit()) {
    ++counters_.candidates_ignored;
    node_.log.debug("ignored peer {} at {}: {} candidates is the limit", id, endpoint,
                    CandidateLimit());
    return false;
  }
  return peers_.Learn(id, endpoint, public_key, pinned);
}

std::string Membership::SourceOf(const std::string& sender) const {
  const topology::PeerEntry* known = peers_.Find(sender);
  return known && known->active ? sender : kUnverifiedSource;
}

void Membership::ReleaseSource(const std::string& peer) {
  auto it = source_of_.find(peer);
  if (it == source_of_.end()) return;
  if (--from_source_[it->second] == 0) from_source_.erase(it->second);
  source_of_.erase(it);
}

void Membership::Learn(const std::vector<PeerInfo>& peers, const std::string& source,
                       TimePoint now) {
  size_t skipped = 0;
  for (const PeerInfo& p : peers) {
    if (p.id == node_.requests.self() || peers_.Find(p.id)) continue;
    if (std::string problem = TcpEndpointProblem(p.endpoint); !problem.empty()) {
      node_.log.debug("ignored gossiped peer {}: {}", p.id, problem);
      continue;
    }
    if (from_source_[source] >= config_.max_candidates_per_source) {
      ++skipped;
      continue;
    }
    // A full view learns only the candidates that could take a member's place.
    if (ViewFull() && !ViewEvictee(p.id, source, now)) continue;
    if (LearnPeer(p.id, p.endpoint, p.public_key, /*pinned=*/false)) {
      node_.log.info("learned peer {} at {} by gossip", p.id, p.endpoint);
      next_hello_at_[p.id] = now;  // greeted from OnTick, a few per tick
      source_of_[p.id] = source;
      peers_.SetSource(p.id, source);
      ++from_source_[source];
    }
  }
  if (from_source_[source] == 0) from_source_.erase(source);
  if (skipped == 0) return;
  counters_.candidates_ignored += skipped;
  node_.log.debug("ignored {} gossiped peers from {}: {} candidates from one source is the limit",
                  skipped, source == kUnverifiedSource ? "unverified senders" : "peer " + source,
                  config_.max_candidates_per_source);
}

void Membership::Drop(const std::string& peer) {
  peers_.Forget(peer);
  next_hello_at_.erase(peer);
  hello_attempts_.erase(peer);
  hellos_of_.erase(peer);
  address_warned_.erase(peer);
  join_problems_.erase(peer);
  ReleaseSource(peer);
  if (node_.sampler.HasPeer(peer)) (void)node_.sampler.RemovePeer(peer);
}

std::vector<PeerInfo> Membership::KnownPeers() const {
  // Rationale: a receiver refuses a PeerList above Limits::max_peers entries (too_many).
  const size_t limit = Limits{}.max_peers;
  std::vector<PeerInfo> known;
  known.push_back({node_.requests.self(), config_.listen_endpoint, config_.public_key});
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (known.size() == limit) break;
    if (p.active && !p.left) known.push_back({p.id, p.endpoint, p.public_key});
  }
  for (const PeerInfo& sybil : config_.sybils) {
    if (known.size() == limit) break;
    known.push_back(sybil);
  }
  return known;
}

}  // namespace meshlearn::node
