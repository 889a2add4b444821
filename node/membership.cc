#include "node/membership.h"

#include <algorithm>

namespace meshlearn::node {
namespace {

constexpr auto kHelloRetryBase = std::chrono::seconds(1);
constexpr auto kHelloRetryMax = std::chrono::seconds(30);
constexpr auto kDeadBackoffMax = std::chrono::seconds(60);
constexpr size_t kHellosPerTick = 2;
constexpr auto kMeshAskPeriod = std::chrono::seconds(1);

}  // namespace

Membership::Membership(MembershipConfig config, NodeServices node)
    : config_(std::move(config)),
      node_(node),
      peers_(node.requests.self(), config_.dead_after_failures, config_.dead_backoff,
             kDeadBackoffMax) {
  for (const PeerAddress& p : config_.initial_peers) LearnPeer(p.id, p.endpoint, p.public_key);
}

void Membership::Restore(const std::vector<PeerAddress>& peers) {
  for (const PeerAddress& p : peers) LearnPeer(p.id, p.endpoint, p.public_key);
}

std::vector<PeerAddress> Membership::Export() const {
  std::vector<PeerAddress> out;
  for (const topology::PeerEntry& p : peers_.Entries())
    out.push_back({p.id, p.endpoint, p.public_key});
  return out;
}

void Membership::GreetAll(TimePoint now, Actions& out) {
  for (const topology::PeerEntry& p : peers_.Entries()) SendHello(p.id, now, out);
}

Hello Membership::OwnHello() const {
  return Hello{config_.listen_endpoint, config_.architecture_id, config_.metric, config_.public_key,
               config_.nonce};
}

bool Membership::HelloOutstanding() const {
  return std::any_of(hellos_.begin(), hellos_.end(),
                     [&](const auto& h) { return !hello_attempts_.count(h.second); });
}

size_t Membership::AdmittedPeers() const {
  const auto& entries = peers_.Entries();
  return static_cast<size_t>(std::count_if(entries.begin(), entries.end(),
                                           [](const topology::PeerEntry& p) { return p.active; }));
}

bool Membership::MeshIncomplete() const {
  return config_.mesh_size > 0 && AdmittedPeers() + 1 < static_cast<size_t>(config_.mesh_size);
}

std::optional<uint64_t> Membership::NonceOf(const std::string& peer) const {
  auto it = nonces_.find(peer);
  if (it == nonces_.end()) return std::nullopt;
  return it->second;
}

void Membership::SendHello(const std::string& peer, TimePoint now, Actions& out) {
  const topology::PeerEntry* entry = peers_.Find(peer);
  if (!entry) return;
  for (const auto& [id, greeted] : hellos_) {
    if (greeted == peer) return;  // already greeting
  }
  next_hello_at_.erase(peer);
  SendRequest request =
      node_.requests.Open(Part::kMembership, *entry, OwnHello(), now + config_.hello_deadline);
  hellos_[request.request_id] = peer;
  out.push_back(std::move(request));
}

void Membership::OnHello(InboundId inbound, const Envelope& env, const Hello& hello, TimePoint now,
                         Actions& out) {
  if (hello.architecture_id != config_.architecture_id) {
    ++refused_peers_;
    std::string why = "model architecture '" + hello.architecture_id + "' differs from '" +
                      config_.architecture_id + "'";
    node_.log.error("refused peer {}: its {}", env.sender, why);
    out.push_back(node_.requests.ReplyTo(inbound, env.request_id, Error{ErrorCode::kRefused, why}));
    return;
  }
  if (env.sender.empty() || env.sender == node_.requests.self()) {
    out.push_back(node_.requests.Reject(
        inbound, env.sender, env.request_id,
        Status::InvalidArgument("Hello needs a sender id other than the receiver's"), now));
    return;
  }
  if (!KeyAllowed(hello.public_key)) {
    out.push_back(node_.requests.Reject(
        inbound, env.sender, env.request_id,
        Status::UnknownSender("public key '" + hello.public_key + "' is not on the allowlist"),
        now));
    return;
  }
  Admit(env.sender, hello, hello.public_key);
  HelloAck ack;
  static_cast<Hello&>(ack) = OwnHello();
  out.push_back(node_.requests.ReplyTo(inbound, env.request_id, ack));
}

void Membership::OnPeerList(InboundId inbound, const Envelope& env, const PeerList& list,
                            TimePoint now, Actions& out) {
  Learn(list.peers, now);
  out.push_back(node_.requests.ReplyTo(inbound, env.request_id, PeerList{KnownPeers()}));
}

void Membership::OnReply(uint64_t request_id, const Result<Message>& reply, const Status& failure,
                         TimePoint now) {
  if (mesh_asks_.erase(request_id)) peer_lists_.insert(request_id);
  if (peer_lists_.erase(request_id)) {
    if (const auto* list = failure.ok() ? std::get_if<PeerList>(&reply->body) : nullptr) {
      Learn(list->peers, now);
    }
    return;
  }
  auto hello = hellos_.find(request_id);
  if (hello == hellos_.end()) return;
  std::string peer = hello->second;
  hellos_.erase(hello);
  const auto* ack = failure.ok() ? std::get_if<HelloAck>(&reply->body) : nullptr;
  if (ack && ack->architecture_id == config_.architecture_id) {
    // With CURVE the peer proved the key we connected with; that one is kept.
    const topology::PeerEntry* entry = peers_.Find(peer);
    Admit(peer, *ack, entry && !entry->public_key.empty() ? entry->public_key : ack->public_key);
    next_hello_at_.erase(peer);
    hello_attempts_.erase(peer);
  } else if (ack || failure.code() == ErrorCode::kRefused) {
    ++refused_peers_;
    node_.log.error("peer {} refused: {}", peer,
                    ack ? "its model architecture '" + ack->architecture_id +
                              "' differs from ours '" + config_.architecture_id + "'"
                        : failure.message());
    peers_.Forget(peer);
    next_hello_at_.erase(peer);
  } else {
    int attempt = ++hello_attempts_[peer];
    auto delay = kHelloRetryBase * (1 << std::min(attempt, 5));
    next_hello_at_[peer] = now + std::min<Clock::duration>(delay, kHelloRetryMax);
    if (attempt == 1 && config_.allowed_keys && failure.code() == ErrorCode::kTimeout) {
      // A peer that does not allowlist our key looks exactly like one that is down.
      node_.log.warn(
          "peer {} did not answer our Hello: it is down, or its allowlist lacks our public key "
          "{}; retrying later",
          peer, config_.public_key);
    }
    node_.log.debug("Hello to {} failed ({}); retrying later", peer, failure.ToString());
  }
}

void Membership::Gossip(TimePoint now, topology::Rng& rng, Actions& out) {
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
  std::vector<std::string> due;
  for (const auto& [peer, at] : next_hello_at_) {
    if (now < at) continue;
    due.push_back(peer);
    if (due.size() == kHellosPerTick) break;
  }
  for (const std::string& peer : due) SendHello(peer, now, out);
  if (MeshIncomplete() && now >= next_mesh_ask_at_) {
    next_mesh_ask_at_ = now + kMeshAskPeriod;
    for (const topology::PeerEntry& p : peers_.Entries()) {
      if (!p.active) continue;
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

bool Membership::KeyAllowed(const std::string& public_key) const {
  return !config_.allowed_keys || config_.allowed_keys->contains(public_key);
}

bool Membership::LearnPeer(const std::string& id, const std::string& endpoint,
                           const std::string& public_key) {
  if (!KeyAllowed(public_key)) {
    node_.log.debug("ignored peer {} at {}: its public key '{}' is not on the allowlist", id,
                    endpoint, public_key);
    return false;
  }
  // Only the peer itself, by proving a new key in a handshake (Admit), changes a key we know.
  // Rationale: otherwise one allowlisted node could redirect us to itself under another's id.
  const topology::PeerEntry* known = peers_.Find(id);
  if (config_.allowed_keys && known && !known->public_key.empty() &&
      known->public_key != public_key) {
    node_.log.debug("ignored peer {} at {} with public key '{}': we know it with another key", id,
                    endpoint, public_key);
    return false;
  }
  return peers_.Learn(id, endpoint, public_key);
}

void Membership::Learn(const std::vector<PeerInfo>& peers, TimePoint now) {
  for (const PeerInfo& p : peers) {
    if (p.id.empty() || p.id == node_.requests.self() || p.endpoint.empty()) continue;
    if (LearnPeer(p.id, p.endpoint, p.public_key)) {
      node_.log.info("learned peer {} at {} by gossip", p.id, p.endpoint);
      next_hello_at_[p.id] = now;  // greeted from OnTick, a few per tick
    }
  }
}

void Membership::Admit(const std::string& peer, const Hello& hello, const std::string& public_key) {
  bool is_new = peers_.Find(peer) == nullptr || !peers_.Find(peer)->active;
  peers_.Learn(peer, hello.listen_endpoint, public_key);
  peers_.MarkActive(peer);
  peers_.RecordSuccess(peer);
  nonces_[peer] = hello.nonce;
  if (!node_.sampler.HasPeer(peer)) (void)node_.sampler.AddPeer(peer);
  if (is_new) node_.log.info("peer {} joined ({})", peer, hello.listen_endpoint);
}

std::vector<PeerInfo> Membership::KnownPeers() const {
  std::vector<PeerInfo> known;
  known.push_back({node_.requests.self(), config_.listen_endpoint, config_.public_key});
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (p.active) known.push_back({p.id, p.endpoint, p.public_key});
  }
  return known;
}

}  // namespace meshlearn::node
