#include "node/logic/requests.h"

#include <algorithm>

namespace meshlearn::node {
namespace {

constexpr auto kRejectionLogInterval = std::chrono::minutes(1);
// Peers whose last rejection line is remembered. Rationale: a flood of ids must not grow the map;
// beyond this many, lines older than the interval are forgotten (or all, when none is).
constexpr size_t kRejectionLogPeers = 1024;

}  // namespace

RequestBook::RequestBook(std::string self, std::shared_ptr<spdlog::logger> log,
                         uint16_t protocol_version)
    : self_(std::move(self)), log_(std::move(log)), protocol_version_(protocol_version) {}

SendRequest RequestBook::Open(Part owner, const topology::PeerEntry& peer, Body body,
                              TimePoint deadline) {
  return Open(owner, PeerInfo{peer.id, peer.endpoint, peer.public_key}, std::move(body), deadline);
}

SendRequest RequestBook::Open(Part owner, const PeerInfo& peer, Body body, TimePoint deadline) {
  uint64_t id = ++last_id_;
  owners_[id] = owner;
  return SendRequest{peer.id, peer.endpoint, peer.public_key, id, Reply(id, std::move(body)),
                     deadline};
}

std::optional<Part> RequestBook::Close(uint64_t request_id) {
  auto it = owners_.find(request_id);
  if (it == owners_.end()) return std::nullopt;
  Part owner = it->second;
  owners_.erase(it);
  return owner;
}

void RequestBook::Forget(uint64_t request_id) { owners_.erase(request_id); }

Message RequestBook::Reply(uint64_t request_id, Body body) const {
  Message message = MakeMessage(self_, request_id, std::max<int64_t>(round_, 0), std::move(body));
  message.envelope.protocol_version = protocol_version_;
  return message;
}

std::vector<Frame> FramesOf(const SendReply& reply) {
  if (reply.encoded_body) return Encode(reply.message.envelope, *reply.encoded_body);
  return Encode(reply.message);
}

SendReply RequestBook::ReplyTo(InboundId inbound, uint64_t request_id, Body body) const {
  return SendReply{inbound, Reply(request_id, std::move(body)), nullptr};
}

SendReply RequestBook::Reject(InboundId inbound, const std::string& sender, uint64_t request_id,
                              const Status& why, TimePoint now) {
  ++rejections_.total;
  ++rejections_.by_code[ErrorCodeName(why.code())];
  std::string who = sender.empty() ? "an unidentified peer" : "peer " + sender;
  if (last_rejection_log_.size() >= kRejectionLogPeers) {
    std::erase_if(last_rejection_log_,
                  [&](const auto& entry) { return now - entry.second >= kRejectionLogInterval; });
    if (last_rejection_log_.size() >= kRejectionLogPeers) last_rejection_log_.clear();
  }
  auto last = last_rejection_log_.find(who);
  if (last == last_rejection_log_.end() || now - last->second >= kRejectionLogInterval) {
    last_rejection_log_[who] = now;
    log_->warn("rejected a message from {}: {} (logged once a minute per peer; see /status)", who,
               why.ToString());
  }
  return ReplyTo(inbound, request_id, Error{why.code(), why.message()});
}

}  // namespace meshlearn::node
