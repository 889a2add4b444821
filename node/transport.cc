#include "node/transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <zmq.hpp>

#include "node/curve_keys.h"
#include "protocol/codec.h"
#include "protocol/messages.h"

namespace meshlearn::node {
namespace {

using Clock = std::chrono::steady_clock;

// Frames below this size are copied into the zmq message: a copy of a few hundred bytes is
// cheaper than the heap-held Frame and the free callback that zero-copy needs.
constexpr size_t kCopyBelowBytes = 512;

// Messages read from one socket per poll round, so that one busy peer cannot starve the others,
// the command queue or the deadlines.
constexpr int kMaxReadsPerSocket = 256;

void SetCommonOptions(zmq::socket_t& socket, const TransportOptions& options) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
  socket.set(zmq::sockopt::rcvhwm, options.receive_high_water_mark);
  // A peer's single frame above the message limit is refused by ZeroMQ itself (it disconnects
  // the peer), so not even one oversized frame is buffered.
  socket.set(zmq::sockopt::maxmsgsize,
             static_cast<int64_t>(std::min<uint64_t>(options.limits.max_message_bytes,
                                                     std::numeric_limits<int64_t>::max())));
}

// Where libzmq asks a context's ZAP handler to authenticate a handshake (RFC 27).
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// ZMQ_ZAP_ENFORCE_DOMAIN, a draft option in libzmq 4.3 (not in the stable header): with it a CURVE
// server refuses every client while no ZAP handler is bound instead of admitting all of them.
constexpr int kZapEnforceDomain = 93;

// The ZAP reply to one ZAP request: `status` "200" admits the client, "400" refuses it.
// RFC 27 reply frames: version, request id, status code, status text, user id, metadata.
std::vector<std::string> ZapReply(const std::string& request_id, const char* status,
                                  const std::string& text, const std::string& user_id) {
  return {"1.0", request_id, status, text, user_id, ""};
}

// Maps a ZeroMQ bind/connect error to the project's codes, naming the endpoint.
Status EndpointError(const char* action, const std::string& endpoint, const zmq::error_t& error) {
  std::string message =
      std::string("cannot ") + action + " ZeroMQ endpoint '" + endpoint + "': " + error.what();
  switch (error.num()) {
    case EINVAL:
    case EPROTONOSUPPORT:
    case ENODEV:
    case ENOCOMPATPROTO:
      return Status::InvalidArgument(message);
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case EMFILE:
      return Status::Unavailable(message);
    default:
      return Status::Internal(message);
  }
}

// A zmq message carrying `frame`'s bytes. Large frames are not copied: the message holds a heap
// copy of the Frame (which shares, not copies, the bytes) until ZeroMQ has sent them.
zmq::message_t ToMessage(const Frame& frame) {
  if (frame.size() < kCopyBelowBytes) return zmq::message_t(frame.data(), frame.size());
  auto keep_alive = std::make_unique<Frame>(frame);
  auto* data = const_cast<uint8_t*>(keep_alive->data());
  zmq::message_t message(
      data, keep_alive->size(), [](void*, void* hint) { delete static_cast<Frame*>(hint); },
      keep_alive.get());
  keep_alive.release();  // now owned by `message`
  return message;
}

// A Frame viewing a received message without copying it.
Frame FromMessage(zmq::message_t message) {
  auto owned = std::make_shared<zmq::message_t>(std::move(message));
  return Frame::View(owned->data(), owned->size(), owned);
}

// Sends `frames` as one multipart message, preceded by `routing_id` when given (ROUTER).
// Returns false when the socket's queue is full (nothing was sent); throws zmq::error_t on other
// errors (EHOSTUNREACH for a vanished ROUTER peer). Multipart messages are atomic in ZeroMQ: once
// the first part is accepted, the others are too.
bool SendFrames(zmq::socket_t& socket, const std::string* routing_id,
                const std::vector<Frame>& frames) {
  size_t parts = frames.size() + (routing_id ? 1 : 0);
  size_t index = 0;
  auto flags_for = [&](size_t i) {
    zmq::send_flags flags = zmq::send_flags::dontwait;
    if (i + 1 < parts) flags = flags | zmq::send_flags::sndmore;
    return flags;
  };
  if (routing_id) {
    if (!socket.send(zmq::buffer(*routing_id), flags_for(index++))) return false;
  }
  for (const Frame& frame : frames) {
    if (!socket.send(ToMessage(frame), flags_for(index)) && index == 0) return false;
    ++index;
  }
  return true;
}

// One multipart message read from a socket.
struct ReceivedMessage {
  std::string routing_id;  // ROUTER only
  std::vector<Frame> frames;
  uint64_t bytes = 0;
  std::string user_id;  // the ZAP handler's user id of the connection (CURVE: the peer's key)
};

// The "User-Id" the ZAP handler gave the connection `message` arrived on, or "" without one.
std::string UserIdOf(zmq::message_t& message) {
  const char* user_id = zmq_msg_gets(message.handle(), "User-Id");
  return user_id ? user_id : "";
}

// Reads one whole multipart message if one is waiting. Keeps at most `max_frames` + 1 frames
// (enough for the decoder to reject the message as too_many) and discards the rest.
std::optional<ReceivedMessage> ReceiveFrames(zmq::socket_t& socket, bool with_routing_id,
                                             uint32_t max_frames) {
  zmq::message_t first;
  if (!socket.recv(first, zmq::recv_flags::dontwait)) return std::nullopt;
  ReceivedMessage received;
  bool more = first.more();
  if (with_routing_id) {
    received.routing_id = first.to_string();
  } else {
    received.bytes += first.size();
    received.frames.push_back(FromMessage(std::move(first)));
  }
  while (more) {
    zmq::message_t part;
    (void)socket.recv(part, zmq::recv_flags::none);  // the rest of a message is already here
    if (with_routing_id && received.frames.empty()) received.user_id = UserIdOf(part);
    more = part.more();
    received.bytes += part.size();
    if (received.frames.size() <= max_frames)
      received.frames.push_back(FromMessage(std::move(part)));
  }
  return received;
}

}  // namespace

// Everything behind the Transport: the sockets, the I/O thread and its state.
class Transport::IoLoop {
 public:
  // The work other threads hand to the I/O thread.
  struct RequestCommand {
    std::string endpoint;
    uint64_t request_id;
    std::vector<Frame> frames;
    Clock::time_point deadline;
    ReplyHandler on_reply;
    std::string server_key;  // CURVE: the key the server must prove
  };
  struct ReplyCommand {
    std::string routing_id;
    uint64_t serial;
    std::vector<Frame> frames;
  };
  struct DisconnectCommand {
    std::string endpoint;
  };

  IoLoop(TransportOptions options, InboundHandler on_request)
      : options_(std::move(options)), on_request_(std::move(on_request)) {}

  ~IoLoop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    Wake();
    if (thread_.joinable()) thread_.join();
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  // Creates the ZAP handler (CURVE), the ROUTER and the wake-up descriptor, binds, and starts
  // the thread.
  Status Start() {
    if (options_.max_pending_inbound == 0 || options_.max_pending_inbound_per_peer == 0) {
      return Status::InvalidArgument(
          "max_pending_inbound and max_pending_inbound_per_peer must be at least 1");
    }
    if (options_.curve) MESHLEARN_RETURN_IF_ERROR(CheckCurveOptions(*options_.curve));
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return Status::Internal("eventfd failed: errno " + std::to_string(errno));
    try {
      if (options_.curve) {
        // The handler is bound before the ROUTER exists, so no handshake ever finds it missing.
        zap_ = zmq::socket_t(context_, zmq::socket_type::rep);
        zap_.set(zmq::sockopt::linger, 0);
        zap_.bind(kZapEndpoint);
      }
      router_ = zmq::socket_t(context_, zmq::socket_type::router);
      SetCommonOptions(router_, options_);
      router_.set(zmq::sockopt::router_mandatory, 1);
      if (options_.curve) {
        router_.set(zmq::sockopt::curve_server, 1);
        router_.set(zmq::sockopt::curve_secretkey, options_.curve->secret_key);
        router_.set(zmq::sockopt::zap_domain, "meshlearn");
        int enforce = 1;  // best effort: a libzmq built without drafts lacks it (see above)
        (void)zmq_setsockopt(router_.handle(), kZapEnforceDomain, &enforce, sizeof(enforce));
      }
    } catch (const zmq::error_t& error) {
      return Status::Internal(std::string("cannot create the ROUTER socket: ") + error.what());
    }
    try {
      router_.bind(options_.listen_endpoint);
      bound_endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& error) {
      return EndpointError("bind", options_.listen_endpoint, error);
    }
    thread_ = std::thread([this] { Run(); });
    return Status::Ok();
  }

  const std::string& bound_endpoint() const { return bound_endpoint_; }

  // Queues `command` for the I/O thread, moving from it. Returns false, leaving `command` intact,
  // once the transport is stopping.
  template <typename CommandType>
  bool Push(CommandType& command) {
    bool was_empty;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return false;
      was_empty = commands_.empty();
      commands_.emplace_back(std::move(command));
    }
    // The I/O thread resets the eventfd before it takes the queue, so one wake-up per
    // empty-to-non-empty transition is enough.
    if (was_empty) Wake();
    return true;
  }

  // Sends a reply at once when called on the I/O thread (a handler answering inline), otherwise
  // queues it. Rationale: inline answers must free their inbound slot before the next inbound
  // request is admitted, or a burst is rejected although the node answers everything at once.
  void ExecuteOrPush(ReplyCommand& command) {
    if (std::this_thread::get_id() == thread_.get_id()) {
      Execute(std::move(command));
    } else {
      Push(command);
    }
  }

  TransportStats Stats() const {
    TransportStats stats;
    for (size_t i = 0; i < kCounterCount; ++i) {
      stats.*kStatsFields[i] = counters_[i].load(std::memory_order_relaxed);
    }
    return stats;
  }

 private:
  using Command = std::variant<RequestCommand, ReplyCommand, DisconnectCommand>;

  // An outgoing connection and the requests waiting for a reply on it.
  struct PeerConnection {
    zmq::socket_t dealer;
    std::string server_key;  // CURVE: the key the server proved
    std::unordered_set<uint64_t> request_ids;
    Clock::time_point idle_since;  // when request_ids last became empty
  };
  // An outgoing request waiting for its reply.
  struct PendingRequest {
    std::string endpoint;
    Clock::time_point deadline;
    ReplyHandler on_reply;
  };
  // One atomic per TransportStats field, written by the I/O thread and read by Stats();
  // kStatsFields names the field of each, in the same order.
  enum Counter : size_t {
    kBytesIn,
    kBytesOut,
    kRequestsSent,
    kRepliesReceived,
    kRequestsReceived,
    kRepliesSent,
    kTimeouts,
    kLateRepliesDropped,
    kInboundRejected,
    kRepliesUndeliverable,
    kInboundPending,
    kOpenConnections,
    kHandshakesRefused,
    kCounterCount
  };
  static constexpr uint64_t TransportStats::*kStatsFields[kCounterCount] = {
      &TransportStats::bytes_in,           &TransportStats::bytes_out,
      &TransportStats::requests_sent,      &TransportStats::replies_received,
      &TransportStats::requests_received,  &TransportStats::replies_sent,
      &TransportStats::timeouts,           &TransportStats::late_replies_dropped,
      &TransportStats::inbound_rejected,   &TransportStats::replies_undeliverable,
      &TransportStats::inbound_pending,    &TransportStats::open_connections,
      &TransportStats::handshakes_refused,
  };
  void Add(Counter counter, uint64_t value = 1) {
    counters_[counter].fetch_add(value, std::memory_order_relaxed);
  }
  void Set(Counter counter, uint64_t value) {
    counters_[counter].store(value, std::memory_order_relaxed);
  }

  void Wake() {
    uint64_t one = 1;
    // A full counter (never in practice) still leaves the descriptor readable, so a failed
    // write cannot lose a wake-up.
    (void)!::write(wake_fd_, &one, sizeof(one));
  }

  // kInvalidArgument unless `curve` holds a matching Z85 key pair and a non-empty allowlist of
  // Z85 keys; fills allowed_keys_.
  Status CheckCurveOptions(const CurveOptions& curve) {
    auto derived = CurvePublicKeyOf(curve.secret_key);
    if (!derived.ok()) return derived.status().WithContext("CURVE options");
    if (*derived != curve.public_key) {
      return Status::InvalidArgument(
          "CURVE options: the public key does not belong to the secret key");
    }
    if (curve.allowed_public_keys.empty()) {
      return Status::InvalidArgument("CURVE options: the allowlist is empty");
    }
    for (const std::string& key : curve.allowed_public_keys) {
      if (!IsZ85Key(key)) {
        return Status::InvalidArgument("CURVE options: allowlisted key '" + key +
                                       "' is not 40 Z85 characters");
      }
      allowed_keys_.insert(key);
    }
    return Status::Ok();
  }

  // The I/O thread.
  void Run() {
    std::vector<zmq::pollitem_t> items;
    std::vector<PeerConnection*> polled_peers;
    while (true) {
      items.clear();
      polled_peers.clear();
      items.push_back({router_.handle(), 0, ZMQ_POLLIN, 0});
      items.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
      if (zap_) items.push_back({zap_.handle(), 0, ZMQ_POLLIN, 0});
      const size_t first_peer = items.size();
      for (auto& [endpoint, peer] : peers_) {
        items.push_back({peer.dealer.handle(), 0, ZMQ_POLLIN, 0});
        polled_peers.push_back(&peer);
      }
      try {
        zmq::poll(items, PollTimeout());
      } catch (const zmq::error_t&) {
        // EINTR: a signal arrived; just go round again.
      }
      // Deadlines first, so that a reply read below after its deadline counts as late.
      ExpireDeadlines(Clock::now());
      if (zap_ && (items[2].revents & ZMQ_POLLIN)) ServeZap();
      if (items[0].revents & ZMQ_POLLIN) ReadInbound();
      for (size_t i = 0; i < polled_peers.size(); ++i) {
        if (items[first_peer + i].revents & ZMQ_POLLIN) ReadReplies(*polled_peers[i]);
      }
      // Commands and the idle sweep last: they may close the DEALERs polled above.
      CloseIdleConnections(Clock::now());
      if (items[1].revents & ZMQ_POLLIN) {
        uint64_t count;
        (void)!::read(wake_fd_, &count, sizeof(count));
      }
      std::vector<Command> commands;
      bool stopping;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        commands.swap(commands_);
        stopping = stopping_;
      }
      if (stopping) {
        Shutdown(std::move(commands));
        return;
      }
      for (Command& command : commands) {
        std::visit([this](auto& c) { Execute(std::move(c)); }, command);
      }
    }
  }

  // Milliseconds until the earliest deadline or idle sweep, rounded up so that the loop never
  // wakes early and spins; -1 (no timeout) when neither is due.
  std::chrono::milliseconds PollTimeout() const {
    std::optional<Clock::time_point> wake_at = idle_sweep_due_;
    if (!deadlines_.empty() && (!wake_at || deadlines_.begin()->first < *wake_at)) {
      wake_at = deadlines_.begin()->first;
    }
    if (!wake_at) return std::chrono::milliseconds(-1);
    auto remaining = *wake_at - Clock::now();
    if (remaining <= Clock::duration::zero()) return std::chrono::milliseconds(0);
    return std::chrono::ceil<std::chrono::milliseconds>(remaining);
  }

  void ExpireDeadlines(Clock::time_point now) {
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      uint64_t request_id = deadlines_.begin()->second;
      const PendingRequest& pending = pending_.at(request_id);
      Status timeout = Status::Timeout("no reply from " + pending.endpoint + " to request " +
                                       std::to_string(request_id) + " before its deadline");
      Add(kTimeouts);
      Complete(request_id, std::move(timeout));
    }
  }

  // Removes request `request_id` from every table and calls its handler with `result`.
  void Complete(uint64_t request_id, Result<std::vector<Frame>> result) {
    auto it = pending_.find(request_id);
    PendingRequest pending = std::move(it->second);
    pending_.erase(it);
    deadlines_.erase({pending.deadline, request_id});
    auto peer = peers_.find(pending.endpoint);
    if (peer != peers_.end()) {
      peer->second.request_ids.erase(request_id);
      if (peer->second.request_ids.empty()) BecameIdle(peer->second);
    }
    pending.on_reply(std::move(result));
  }

  void BecameIdle(PeerConnection& peer) {
    peer.idle_since = Clock::now();
    if (options_.idle_connection_timeout > Clock::duration::zero() && !idle_sweep_due_) {
      idle_sweep_due_ = peer.idle_since + options_.idle_connection_timeout;
    }
  }

  // Closes the DEALERs without outstanding requests for idle_connection_timeout, and schedules
  // the next sweep for the earliest of the remaining idle ones.
  // Rationale: every DEALER costs file descriptors on both nodes (about 3 per peer), and a node
  // meets most of the mesh over time; 100 nodes in one process would otherwise run out.
  void CloseIdleConnections(Clock::time_point now) {
    if (!idle_sweep_due_ || now < *idle_sweep_due_) return;
    idle_sweep_due_.reset();
    for (auto it = peers_.begin(); it != peers_.end();) {
      PeerConnection& peer = it->second;
      if (!peer.request_ids.empty()) {
        ++it;
        continue;
      }
      Clock::time_point close_at = peer.idle_since + options_.idle_connection_timeout;
      if (close_at <= now) {
        it = peers_.erase(it);
        continue;
      }
      if (!idle_sweep_due_ || close_at < *idle_sweep_due_) idle_sweep_due_ = close_at;
      ++it;
    }
    Set(kOpenConnections, peers_.size());
  }

  // Answers the waiting ZAP requests (RFC 27): 200 for a CURVE client whose key is allowlisted,
  // with that key (Z85) as the connection's user id, and 400 for any other.
  void ServeZap() {
    for (int i = 0; i < kMaxReadsPerSocket; ++i) {
      std::vector<std::string> request;
      try {
        zmq::message_t part;
        if (!zap_.recv(part, zmq::recv_flags::dontwait)) return;
        request.push_back(part.to_string());
        while (part.more()) {
          (void)zap_.recv(part, zmq::recv_flags::none);
          request.push_back(part.to_string());
        }
      } catch (const zmq::error_t&) {
        return;
      }
      // version, request id, domain, address, routing id, mechanism, credentials...
      std::string request_id = request.size() > 1 ? request[1] : "";
      std::string key;
      if (request.size() == 7 && request[0] == "1.0" && request[5] == "CURVE" &&
          request[6].size() == 32) {
        char z85[kZ85KeyLength + 1];
        if (zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(request[6].data()), 32)) key = z85;
      }
      std::vector<std::string> reply;
      if (!key.empty() && allowed_keys_.contains(key)) {
        reply = ZapReply(request_id, "200", "OK", key);
      } else {
        Add(kHandshakesRefused);
        reply = ZapReply(request_id, "400", "key not on the allowlist", "");
      }
      try {
        for (size_t part = 0; part < reply.size(); ++part) {
          zap_.send(zmq::buffer(reply[part]),
                    part + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        }
      } catch (const zmq::error_t&) {
        // The requesting handshake has gone (the context is closing); nothing to answer.
      }
    }
  }

  void ReadInbound() {
    for (int i = 0; i < kMaxReadsPerSocket; ++i) {
      std::optional<ReceivedMessage> received;
      try {
        received = ReceiveFrames(router_, /*with_routing_id=*/true, options_.limits.max_frames);
      } catch (const zmq::error_t&) {
        return;
      }
      if (!received) return;
      Add(kRequestsReceived);
      Add(kBytesIn, received->bytes);
      if (received->frames.empty()) {  // a routing id alone: not a message a DEALER can send
        Add(kInboundRejected);
        continue;
      }
      AdmitInbound(std::move(*received));
    }
  }

  // Hands an inbound request to the node, or answers Error(unavailable) when the node already
  // holds too many unanswered requests in total or from this peer connection.
  void AdmitInbound(ReceivedMessage received) {
    size_t& from_peer = inbound_per_peer_[received.routing_id];
    if (open_inbound_.size() >= options_.max_pending_inbound ||
        from_peer >= options_.max_pending_inbound_per_peer) {
      if (from_peer == 0) inbound_per_peer_.erase(received.routing_id);
      Add(kInboundRejected);
      RejectInbound(received);
      return;
    }
    ++from_peer;
    uint64_t serial = next_inbound_serial_++;
    open_inbound_.insert(serial);
    Set(kInboundPending, open_inbound_.size());
    InboundRequest request;
    request.token.routing_id_ = std::move(received.routing_id);
    request.token.serial_ = serial;
    request.frames = std::move(received.frames);
    request.bytes = received.bytes;
    request.peer_public_key = std::move(received.user_id);
    on_request_(std::move(request));
  }

  void RejectInbound(const ReceivedMessage& received) {
    uint64_t request_id = 0;  // when the envelope is unreadable the reply cannot be matched anyway
    if (!received.frames.empty()) {
      auto envelope = DecodeEnvelope(received.frames[0], options_.limits);
      if (envelope.ok()) request_id = envelope->request_id;
    }
    Error error{ErrorCode::kUnavailable,
                "node " + options_.node_id + " has too many requests pending; retry later"};
    // The transport does not know the node's round; 0 marks a transport-level answer.
    SendReply(received.routing_id, Encode(MakeMessage(options_.node_id, request_id, 0, error)));
  }

  // Sends a reply on the ROUTER; a full queue or a vanished peer drops it and counts it.
  void SendReply(const std::string& routing_id, const std::vector<Frame>& frames) {
    bool sent = false;
    try {
      sent = !frames.empty() && SendFrames(router_, &routing_id, frames);
    } catch (const zmq::error_t&) {
      // EHOSTUNREACH (ZMQ_ROUTER_MANDATORY): the peer connection is gone.
    }
    if (sent) {
      Add(kRepliesSent);
      Add(kBytesOut, TotalBytes(frames));
    } else {
      Add(kRepliesUndeliverable);
    }
  }

  void ReadReplies(PeerConnection& peer) {
    for (int i = 0; i < kMaxReadsPerSocket; ++i) {
      std::optional<ReceivedMessage> received;
      try {
        received =
            ReceiveFrames(peer.dealer, /*with_routing_id=*/false, options_.limits.max_frames);
      } catch (const zmq::error_t&) {
        return;
      }
      if (!received) return;
      Add(kBytesIn, received->bytes);
      auto envelope = DecodeEnvelope(received->frames[0], options_.limits);
      // Only a reply to a request still pending on this very connection is accepted.
      if (!envelope.ok() || !peer.request_ids.contains(envelope->request_id)) {
        Add(kLateRepliesDropped);
        continue;
      }
      Add(kRepliesReceived);
      Complete(envelope->request_id, std::move(received->frames));
    }
  }

  void Execute(RequestCommand command) {
    auto fail = [&](Status status) { command.on_reply(std::move(status)); };
    std::string what = "request " + std::to_string(command.request_id) + " to " + command.endpoint;
    if (pending_.contains(command.request_id)) {
      return fail(Status::InvalidArgument(what + ": this request id is already outstanding"));
    }
    if (command.frames.empty()) return fail(Status::InvalidArgument(what + ": no frames"));
    auto envelope = DecodeEnvelope(command.frames[0], options_.limits);
    if (!envelope.ok()) return fail(envelope.status().WithContext(what + ": bad envelope"));
    if (envelope->request_id != command.request_id) {
      return fail(Status::InvalidArgument(what + ": the envelope carries request id " +
                                          std::to_string(envelope->request_id)));
    }
    if (options_.curve) {
      if (!IsZ85Key(command.server_key)) {
        return fail(Status::InvalidArgument(
            what + ": CURVE needs the peer's public key (40 Z85 characters), got '" +
            command.server_key + "'"));
      }
      if (!allowed_keys_.contains(command.server_key)) {
        return fail(Status::Refused(what + ": its public key " + command.server_key +
                                    " is not on the allowlist"));
      }
    }
    if (command.deadline <= Clock::now()) {
      Add(kTimeouts);
      return fail(Status::Timeout(what + ": the deadline passed before it was sent"));
    }
    auto peer = ConnectedPeer(command.endpoint, command.server_key);
    if (!peer.ok()) return fail(peer.status());
    Status send_error;
    try {
      if (!SendFrames((*peer)->dealer, nullptr, command.frames)) {
        send_error = Status::Unavailable(what + ": the send queue is full");
      }
    } catch (const zmq::error_t& error) {
      send_error = Status::Unavailable(what + ": " + error.what());
    }
    if (!send_error.ok()) {
      if ((*peer)->request_ids.empty()) BecameIdle(**peer);  // a new DEALER must not leak
      return fail(std::move(send_error));
    }
    Add(kRequestsSent);
    Add(kBytesOut, TotalBytes(command.frames));
    (*peer)->request_ids.insert(command.request_id);
    deadlines_.insert({command.deadline, command.request_id});
    pending_.emplace(
        command.request_id,
        PendingRequest{std::move(command.endpoint), command.deadline, std::move(command.on_reply)});
  }

  // The DEALER to `endpoint`, connected on first use; with CURVE, to a server proving
  // `server_key` (a connection made for another key is replaced).
  Result<PeerConnection*> ConnectedPeer(const std::string& endpoint,
                                        const std::string& server_key) {
    auto it = peers_.find(endpoint);
    if (it != peers_.end() && (!options_.curve || it->second.server_key == server_key)) {
      return &it->second;
    }
    if (it != peers_.end()) Execute(DisconnectCommand{endpoint});  // the peer's key changed
    PeerConnection peer;
    try {
      peer.dealer = zmq::socket_t(context_, zmq::socket_type::dealer);
      SetCommonOptions(peer.dealer, options_);
      peer.dealer.set(zmq::sockopt::reconnect_ivl,
                      static_cast<int>(options_.reconnect_interval.count()));
      peer.dealer.set(zmq::sockopt::reconnect_ivl_max,
                      static_cast<int>(options_.max_reconnect_interval.count()));
      if (options_.curve) {
        peer.dealer.set(zmq::sockopt::curve_serverkey, server_key);
        peer.dealer.set(zmq::sockopt::curve_publickey, options_.curve->public_key);
        peer.dealer.set(zmq::sockopt::curve_secretkey, options_.curve->secret_key);
        peer.server_key = server_key;
      }
      peer.dealer.connect(endpoint);
    } catch (const zmq::error_t& error) {
      return EndpointError("connect to", endpoint, error);
    }
    PeerConnection* connected = &peers_.emplace(endpoint, std::move(peer)).first->second;
    Set(kOpenConnections, peers_.size());
    return connected;
  }

  void Execute(ReplyCommand command) {
    if (open_inbound_.erase(command.serial) == 0) {
      Add(kRepliesUndeliverable);  // a second reply to the same request
      return;
    }
    Set(kInboundPending, open_inbound_.size());
    auto it = inbound_per_peer_.find(command.routing_id);
    if (it != inbound_per_peer_.end() && --it->second == 0) inbound_per_peer_.erase(it);
    SendReply(command.routing_id, command.frames);
  }

  void Execute(DisconnectCommand command) {
    auto it = peers_.find(command.endpoint);
    if (it == peers_.end()) return;
    std::vector<uint64_t> request_ids(it->second.request_ids.begin(), it->second.request_ids.end());
    peers_.erase(it);  // closes the DEALER (linger 0)
    Set(kOpenConnections, peers_.size());
    for (uint64_t request_id : request_ids) {
      Complete(request_id, Status::Unavailable("request " + std::to_string(request_id) + " to " +
                                               command.endpoint + ": disconnected"));
    }
  }

  // Fails every outstanding request, including those still queued, and closes every socket.
  void Shutdown(std::vector<Command> commands) {
    std::vector<uint64_t> request_ids;
    for (const auto& [request_id, pending] : pending_) request_ids.push_back(request_id);
    for (uint64_t request_id : request_ids) {
      Complete(request_id,
               Status::Unavailable("the transport of " + options_.node_id + " is stopping"));
    }
    for (Command& command : commands) {
      if (auto* request = std::get_if<RequestCommand>(&command)) {
        request->on_reply(
            Status::Unavailable("the transport of " + options_.node_id + " is stopping"));
      }
    }
    peers_.clear();
    router_.close();
    if (zap_) zap_.close();  // after the ROUTER: no handshake may find the handler gone
  }

  const TransportOptions options_;
  const InboundHandler on_request_;
  // Declared before the sockets so that it is destroyed after them.
  zmq::context_t context_{1};
  zmq::socket_t zap_;  // CURVE only: the ZAP handler; declared before router_, so closed after it
  zmq::socket_t router_;
  std::set<std::string> allowed_keys_;  // CURVE: Z85 keys; written by Start() only
  std::string bound_endpoint_;
  int wake_fd_ = -1;
  std::thread thread_;

  // Shared with the calling threads.
  std::mutex mutex_;
  std::vector<Command> commands_;  // guarded by mutex_
  bool stopping_ = false;          // guarded by mutex_
  std::array<std::atomic<uint64_t>, kCounterCount> counters_{};

  // I/O thread only.
  std::map<std::string, PeerConnection> peers_;  // by endpoint
  std::unordered_map<uint64_t, PendingRequest> pending_;
  std::set<std::pair<Clock::time_point, uint64_t>> deadlines_;
  std::unordered_set<uint64_t> open_inbound_;                 // serials awaiting Reply()
  std::unordered_map<std::string, size_t> inbound_per_peer_;  // open requests by routing id
  uint64_t next_inbound_serial_ = 1;
  std::optional<Clock::time_point> idle_sweep_due_;  // unset: no idle DEALER to close
};

Result<std::unique_ptr<Transport>> Transport::Start(TransportOptions options,
                                                    InboundHandler on_request) {
  std::unique_ptr<Transport> transport(new Transport());
  transport->loop_ = std::make_unique<IoLoop>(std::move(options), std::move(on_request));
  MESHLEARN_RETURN_IF_ERROR(transport->loop_->Start());
  return transport;
}

Transport::~Transport() = default;

const std::string& Transport::bound_endpoint() const { return loop_->bound_endpoint(); }

void Transport::Request(const std::string& endpoint, uint64_t request_id, std::vector<Frame> frames,
                        Clock::time_point deadline, ReplyHandler on_reply,
                        const std::string& server_public_key) {
  IoLoop::RequestCommand command{endpoint, request_id,          std::move(frames),
                                 deadline, std::move(on_reply), server_public_key};
  if (!loop_->Push(command)) {
    command.on_reply(Status::Unavailable("request " + std::to_string(request_id) + " to " +
                                         endpoint + ": the transport is stopping"));
  }
}

void Transport::Reply(const ReplyToken& token, std::vector<Frame> frames) {
  IoLoop::ReplyCommand command{token.routing_id_, token.serial_, std::move(frames)};
  loop_->ExecuteOrPush(command);
}

void Transport::Disconnect(const std::string& endpoint) {
  IoLoop::DisconnectCommand command{endpoint};
  loop_->Push(command);
}

TransportStats Transport::Stats() const { return loop_->Stats(); }

}  // namespace meshlearn::node
