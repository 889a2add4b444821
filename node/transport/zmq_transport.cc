#include "node/transport/zmq_transport.h"
#include "node/transport/transport_rules.h"

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

#include "node/transport/curve_keys.h"
#include "node/transport/link_watch.h"
#include "node/transport/zmq_sockets.h"
#include "protocol/codec.h"
#include "protocol/messages.h"

namespace meshlearn::node {
namespace {

using Clock = std::chrono::steady_clock;

// Messages read from one socket per poll round, so that one busy peer cannot starve the others,
// the command queue or the deadlines.
constexpr int kMaxReadsPerSocket = 256;

// Everything behind the transport: the sockets, the I/O thread and its state.
class IoLoop {
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
    auto allowed = CheckTransportOptions(options_);
    if (!allowed.ok()) return allowed.status();
    allowed_keys_ = std::move(*allowed);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return Status::Internal("eventfd failed: errno " + std::to_string(errno));
    try {
      if (options_.curve) {
        // The handler is bound before the ROUTER exists, so no handshake ever finds it missing.
        zap_ = BindZapHandler(context_);
      }
      router_ = zmq::socket_t(context_, zmq::socket_type::router);
      SetCommonOptions(router_, options_);
      router_.set(zmq::sockopt::router_mandatory, 1);
      if (options_.curve) SetCurveServer(router_, *options_.curve, "meshlearn");
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

  TransportStats Stats() const { return counters_.Load(); }

 private:
  using Command = std::variant<RequestCommand, ReplyCommand, DisconnectCommand>;

  // An outgoing connection and the requests waiting for a reply on it.
  struct PeerConnection {
    zmq::socket_t dealer;
    // The DEALER's monitor until its first handshake succeeds (node/transport/link_watch.h);
    // declared after it, so closed before it.
    std::optional<LinkWatch> watch;
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
  using enum TransportCounters::Counter;
  void Add(TransportCounters::Counter counter, uint64_t value = 1) {
    counters_.Add(counter, value);
  }
  void Set(TransportCounters::Counter counter, uint64_t value) { counters_.Set(counter, value); }

  void Wake() {
    uint64_t one = 1;
    // A full counter (never in practice) still leaves the descriptor readable, so a failed
    // write cannot lose a wake-up.
    (void)!::write(wake_fd_, &one, sizeof(one));
  }

  // The I/O thread.
  void Run() {
    std::vector<zmq::pollitem_t> items;
    std::vector<PeerConnection*> polled_peers;
    std::vector<PeerConnection*> watched_peers;
    while (true) {
      items.clear();
      polled_peers.clear();
      watched_peers.clear();
      items.push_back({router_.handle(), 0, ZMQ_POLLIN, 0});
      items.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
      if (zap_) items.push_back({zap_.handle(), 0, ZMQ_POLLIN, 0});
      const size_t first_peer = items.size();
      for (auto& [endpoint, peer] : peers_) {
        items.push_back({peer.dealer.handle(), 0, ZMQ_POLLIN, 0});
        polled_peers.push_back(&peer);
      }
      const size_t first_watch = items.size();
      for (auto& [endpoint, peer] : peers_) {
        if (!peer.watch) continue;
        items.push_back({peer.watch->handle(), 0, ZMQ_POLLIN, 0});
        watched_peers.push_back(&peer);
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
      for (size_t i = 0; i < watched_peers.size(); ++i) {
        if (items[first_watch + i].revents & ZMQ_POLLIN) ReadLinkEvents(*watched_peers[i]);
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
      std::string problem = LinkProblem(pending.endpoint);
      // The same words for every request to the endpoint, so that a node can tell a new cause.
      Status timeout =
          Status::Timeout("no reply from " + pending.endpoint + " before the deadline" +
                          (problem.empty() ? "" : ": " + problem));
      Add(kTimeouts);
      Complete(request_id, std::move(timeout));
    }
  }

  // Reads `peer`'s monitor events, and ends the watch once its handshake has succeeded.
  void ReadLinkEvents(PeerConnection& peer) {
    if (peer.watch && peer.watch->ReadEvents()) {
      peer.watch->Stop(peer.dealer);
      peer.watch.reset();
    }
  }

  // Why the connection to `endpoint` carries no reply (DescribeLink), or "" when its handshake
  // succeeded or it is not watched.
  std::string LinkProblem(const std::string& endpoint) {
    auto it = peers_.find(endpoint);
    if (it == peers_.end() || !it->second.watch) return "";
    ReadLinkEvents(it->second);
    if (!it->second.watch) return "";
    return DescribeLink(it->second.watch->evidence(), endpoint,
                        options_.curve ? options_.curve->public_key : "");
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

  void ServeZap() {
    Add(kHandshakesRefused, AnswerZapRequests(zap_, allowed_keys_, kMaxReadsPerSocket));
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
    request.token.route = std::move(received.routing_id);
    request.token.serial = serial;
    request.frames = std::move(received.frames);
    request.bytes = received.bytes;
    request.peer_public_key = std::move(received.user_id);
    on_request_(std::move(request));
  }

  void RejectInbound(const ReceivedMessage& received) {
    SendReply(received.routing_id, TooManyPendingReply(options_, received.frames));
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
      std::optional<uint64_t> request_id = ReplyRequestId(received->frames[0], options_.limits);
      // Only a reply to a request still pending on this very connection is accepted.
      if (!request_id || !peer.request_ids.contains(*request_id)) {
        Add(kLateRepliesDropped);
        continue;
      }
      Add(kRepliesReceived);
      Complete(*request_id, std::move(received->frames));
    }
  }

  void Execute(RequestCommand command) {
    auto fail = [&](Status status) { command.on_reply(std::move(status)); };
    std::string what = "request " + std::to_string(command.request_id) + " to " + command.endpoint;
    if (pending_.contains(command.request_id)) {
      return fail(Status::InvalidArgument(what + ": this request id is already outstanding"));
    }
    Status checked = CheckOutgoingRequest(options_, allowed_keys_, command.endpoint,
                                          command.request_id, command.frames, command.server_key);
    if (!checked.ok()) return fail(std::move(checked));
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
        SetCurveClient(peer.dealer, *options_.curve, server_key);
        peer.server_key = server_key;
      }
      // Best effort: a connection whose monitor ZeroMQ refuses still works, without the words.
      if (auto watch = LinkWatch::Start(context_, peer.dealer, next_watch_serial_++); watch.ok()) {
        peer.watch = std::move(*watch);
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
  TransportCounters counters_;

  // I/O thread only.
  std::map<std::string, PeerConnection> peers_;  // by endpoint
  std::unordered_map<uint64_t, PendingRequest> pending_;
  std::set<std::pair<Clock::time_point, uint64_t>> deadlines_;
  std::unordered_set<uint64_t> open_inbound_;                 // serials awaiting Reply()
  std::unordered_map<std::string, size_t> inbound_per_peer_;  // open requests by routing id
  uint64_t next_inbound_serial_ = 1;
  uint64_t next_watch_serial_ = 1;                   // names each LinkWatch's inproc address
  std::optional<Clock::time_point> idle_sweep_due_;  // unset: no idle DEALER to close
};

class ZmqTransport final : public Transport {
 public:
  explicit ZmqTransport(std::unique_ptr<IoLoop> loop) : loop_(std::move(loop)) {}

  const std::string& bound_endpoint() const override { return loop_->bound_endpoint(); }

  void Request(const std::string& endpoint, uint64_t request_id, std::vector<Frame> frames,
               Clock::time_point deadline, ReplyHandler on_reply,
               const std::string& server_public_key) override {
    IoLoop::RequestCommand command{endpoint, request_id,          std::move(frames),
                                   deadline, std::move(on_reply), server_public_key};
    if (!loop_->Push(command)) {
      command.on_reply(Status::Unavailable("request " + std::to_string(request_id) + " to " +
                                           endpoint + ": the transport is stopping"));
    }
  }

  void Reply(const ReplyToken& token, std::vector<Frame> frames) override {
    IoLoop::ReplyCommand command{token.route, token.serial, std::move(frames)};
    loop_->ExecuteOrPush(command);
  }

  void Disconnect(const std::string& endpoint) override {
    IoLoop::DisconnectCommand command{endpoint};
    loop_->Push(command);
  }

  TransportStats Stats() const override { return loop_->Stats(); }

 private:
  std::unique_ptr<IoLoop> loop_;
};

}  // namespace

Result<std::unique_ptr<Transport>> StartZmqTransport(TransportOptions options,
                                                     InboundHandler on_request) {
  auto loop = std::make_unique<IoLoop>(std::move(options), std::move(on_request));
  MESHLEARN_RETURN_IF_ERROR(loop->Start());
  return std::unique_ptr<Transport>(std::make_unique<ZmqTransport>(std::move(loop)));
}

}  // namespace meshlearn::node
