#include "node/transport/simulated_network.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "node/transport/timer_queue.h"
#include "node/transport/transport_rules.h"
#include "protocol/codec.h"

namespace meshlearn::node {
namespace {

using Clock = std::chrono::steady_clock;
using enum TransportCounters::Counter;

// The host and port of "tcp://<host>:<port>" (port "*" or 0..65535), or kInvalidArgument.
Result<std::pair<std::string, std::string>> ParseEndpoint(const std::string& endpoint) {
  const std::string prefix = "tcp://";
  size_t colon = endpoint.rfind(':');
  auto bad = [&] {
    return Status::InvalidArgument("cannot bind endpoint '" + endpoint +
                                   "': it must read tcp://<host>:<port>");
  };
  if (endpoint.rfind(prefix, 0) != 0 || colon == std::string::npos || colon <= prefix.size() ||
      colon + 1 >= endpoint.size()) {
    return bad();
  }
  std::string host = endpoint.substr(prefix.size(), colon - prefix.size());
  std::string port = endpoint.substr(colon + 1);
  if (port != "*" && (port.find_first_not_of("0123456789") != std::string::npos ||
                      port.size() > 5 || std::stoi(port) > 65535)) {
    return bad();
  }
  return std::make_pair(host, port);
}

// A NetworkClock on real time: one thread runs every task, due timers first (so that a reply
// handled after its deadline counts as late), then the queued work, in order.
class RealTimeNetworkClock final : public NetworkClock {
 public:
  RealTimeNetworkClock() : thread_([this] { Run(); }) {}

  ~RealTimeNetworkClock() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  Clock::time_point Now() const override { return Clock::now(); }

  TimerId At(Clock::time_point at, std::function<void()> task) override {
    TimerId id;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      id = timers_.Add(at, std::move(task));
    }
    wake_.notify_one();
    return id;
  }

  void Cancel(const TimerId& id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    timers_.Cancel(id);
  }

  void Enter(std::function<void()> task, bool wait) override {
    if (std::this_thread::get_id() == thread_.get_id()) return task();
    if (!wait) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
      }
      wake_.notify_one();
      return;
    }
    std::promise<void> done;
    Enter(
        [&] {
          task();
          done.set_value();
        },
        /*wait=*/false);
    done.get_future().wait();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      Clock::time_point now = Clock::now();
      while (!timers_.empty() && timers_.next_time() <= now) {
        std::function<void()> fire = timers_.PopNext();
        lock.unlock();
        fire();
        lock.lock();
      }
      if (tasks_.empty() && !stopping_) {
        if (timers_.empty()) {
          wake_.wait(lock, [&] { return !tasks_.empty() || stopping_; });
        } else {
          wake_.wait_until(lock, timers_.next_time(), [&] { return !tasks_.empty() || stopping_; });
        }
      }
      if (stopping_ && tasks_.empty()) return;
      std::deque<std::function<void()>> batch;
      batch.swap(tasks_);
      lock.unlock();
      for (std::function<void()>& task : batch) task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  TimerQueue timers_;                        // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::thread thread_;                       // last: starts once everything above exists
};

}  // namespace

// The medium: every transport's state, touched only on the clock's thread.
class SimulatedNetwork::Core {
 public:
  Core(std::shared_ptr<NetworkClock> clock, LinkModel links)
      : links_(std::move(links)), clock_(std::move(clock)) {}

  NetworkClock& clock() { return *clock_; }
  // Network thread: the fates of the messages so far.
  const MessageLedger& ledger() const { return ledger_; }

  // Network thread: binds a station for `options`; its id, or why not.
  Result<uint64_t> Bind(TransportOptions options, InboundHandler on_request,
                        std::shared_ptr<TransportCounters> counters, std::string* bound) {
    auto allowed = CheckTransportOptions(options);
    if (!allowed.ok()) return allowed.status();
    auto parsed = ParseEndpoint(options.listen_endpoint);
    if (!parsed.ok()) return parsed.status();
    auto [host, port] = *parsed;
    std::string endpoint = "tcp://" + host + ":" + port;
    if (port == "*" || std::stoi(port) == 0) {
      do {
        endpoint = "tcp://" + host + ":" + std::to_string(next_port_++);
      } while (bound_.contains(endpoint));
    }
    if (bound_.contains(endpoint)) {
      return Status::Unavailable("cannot bind endpoint '" + options.listen_endpoint +
                                 "': address already in use");
    }
    auto station = std::make_unique<Station>();
    station->id = next_station_++;
    station->endpoint = endpoint;
    station->options = std::move(options);
    station->on_request = std::move(on_request);
    station->allowed = std::move(*allowed);
    station->counters = std::move(counters);
    bound_[endpoint] = station->id;
    *bound = endpoint;
    uint64_t id = station->id;
    stations_[id] = std::move(station);
    return id;
  }

  // Network thread: fails everything station `id` has outstanding and removes it.
  void Unbind(uint64_t id) {
    Station* s = Find(id);
    if (!s) return;
    std::vector<uint64_t> request_ids;
    for (const auto& [request_id, pending] : s->pending) request_ids.push_back(request_id);
    for (uint64_t request_id : request_ids) {
      Complete(*s, request_id,
               Status::Unavailable("the transport of " + s->options.node_id + " is stopping"));
    }
    for (const auto& [endpoint, connection] : s->connections) routes_.erase(connection.route);
    bound_.erase(s->endpoint);
    stations_.erase(id);
  }

  // Network thread: an outgoing request of station `id` (Transport::Request).
  void Request(uint64_t id, const std::string& endpoint, uint64_t request_id,
               std::vector<Frame> frames, Clock::time_point deadline, const ReplyHandler& on_reply,
               const std::string& server_key) {
    Station* c = Find(id);
    // Rationale: built only for an error; a simulation sends millions of requests.
    auto what = [&] { return "request " + std::to_string(request_id) + " to " + endpoint; };
    if (!c) return Later(on_reply, Status::Unavailable(what() + ": the transport is stopping"));
    if (c->pending.contains(request_id)) {
      return Later(on_reply,
                   Status::InvalidArgument(what() + ": this request id is already outstanding"));
    }
    Status checked =
        CheckOutgoingRequest(c->options, c->allowed, endpoint, request_id, frames, server_key);
    if (!checked.ok()) return Later(on_reply, std::move(checked));
    auto address = ParseEndpoint(endpoint);
    if (!address.ok() || address->second == "*" || std::stoi(address->second) == 0) {
      return Later(on_reply,
                   Status::InvalidArgument(what() + ": not an endpoint one can connect to"));
    }
    if (deadline <= clock_->Now()) {
      c->counters->Add(kTimeouts);
      return Later(on_reply, Status::Timeout(what() + ": the deadline passed before it was sent"));
    }
    Connection& connection = Connect(*c, endpoint, server_key);
    Station* server = Bound(endpoint);
    // Nobody listens: the request waits in the connection's send queue, which is bounded.
    if (!server && connection.request_ids.size() >=
                       static_cast<size_t>(std::max(c->options.send_high_water_mark, 0))) {
      if (connection.request_ids.empty()) BecameIdle(*c, connection);
      return Later(on_reply, Status::Unavailable(what() + ": the send queue is full"));
    }
    c->counters->Add(kRequestsSent);
    c->counters->Add(kBytesOut, TotalBytes(frames));
    connection.request_ids.insert(request_id);
    c->pending[request_id] = Pending{endpoint, on_reply, connection.route,
                                     clock_->At(deadline, [this, id, request_id, deadline] {
                                       Expire(id, request_id, deadline);
                                     })};
    if (!server) return;
    // Addressed now: the request reaches this very transport, or nobody.
    std::optional<Clock::duration> duplicate;
    auto delay = Transit(*c, *server, frames, /*reply=*/false, duplicate);
    if (!delay) return;  // lost on the way
    if (duplicate) DeliverAfter(*duplicate, id, connection.route, server->id, frames);
    DeliverAfter(*delay, id, connection.route, server->id, std::move(frames));
  }

  // Network thread: the reply of station `id` to the request of `token`.
  void Reply(uint64_t id, const ReplyToken& token, std::vector<Frame> frames) {
    Station* s = Find(id);
    if (!s) return;
    auto open = s->open_inbound.find(token.serial);
    if (open == s->open_inbound.end() || open->second != token.route) {
      s->counters->Add(kRepliesUndeliverable);  // a second reply to the same request
      return;
    }
    s->open_inbound.erase(open);
    s->counters->Set(kInboundPending, s->open_inbound.size());
    auto per_route = s->inbound_per_route.find(token.route);
    if (per_route != s->inbound_per_route.end() && --per_route->second == 0) {
      s->inbound_per_route.erase(per_route);
    }
    SendReply(*s, token.route, std::move(frames));
  }

  // Network thread: closes station `id`'s connection to `endpoint`.
  void Disconnect(uint64_t id, const std::string& endpoint) {
    if (Station* c = Find(id)) Disconnect(*c, endpoint);
  }

 private:
  // An outgoing request waiting for its reply.
  struct Pending {
    std::string endpoint;
    ReplyHandler on_reply;
    std::string route;                     // the connection it went out on
    NetworkClock::TimerId deadline_timer;  // at its deadline; cancelled when it completes
  };
  // An outgoing connection and the requests waiting for a reply on it.
  struct Connection {
    std::string route;       // the network's id of this connection
    std::string server_key;  // CURVE: the key the server must prove
    std::set<uint64_t> request_ids;
    Clock::time_point idle_since;
  };
  // One transport's state.
  struct Station {
    uint64_t id = 0;
    std::string endpoint;
    TransportOptions options;
    InboundHandler on_request;
    std::set<std::string> allowed;  // CURVE allowlist
    std::shared_ptr<TransportCounters> counters;
    std::unordered_map<std::string, Connection> connections;    // outgoing, by endpoint
    std::unordered_map<uint64_t, Pending> pending;              // outgoing requests, by request id
    std::unordered_map<uint64_t, std::string> open_inbound;     // serial -> route
    std::unordered_map<std::string, size_t> inbound_per_route;  // open requests per connection
    uint64_t next_serial = 1;
  };
  // Who owns a connection: its client and the key of the connection in the client's
  // `connections` (stable while the connection lives; its route is erased with it). Rationale: a
  // pointer, not a copy, as a simulated node holds a connection per peer it talked to.
  struct Route {
    uint64_t client = 0;
    const std::string* endpoint = nullptr;
  };

  Station* Find(uint64_t id) {
    auto it = stations_.find(id);
    return it == stations_.end() ? nullptr : it->second.get();
  }

  Station* Bound(const std::string& endpoint) {
    auto it = bound_.find(endpoint);
    return it == bound_.end() ? nullptr : Find(it->second);
  }

  Connection& Connect(Station& c, const std::string& endpoint, const std::string& server_key) {
    auto it = c.connections.find(endpoint);
    if (it != c.connections.end() && (!c.options.curve || it->second.server_key == server_key)) {
      return it->second;
    }
    if (it != c.connections.end()) Disconnect(c, endpoint);  // the peer's key changed
    Connection connection;
    connection.route = std::to_string(next_route_++);
    connection.server_key = server_key;
    const std::string route = connection.route;
    auto made = c.connections.emplace(endpoint, std::move(connection)).first;
    routes_[route] = Route{c.id, &made->first};
    c.counters->Set(kOpenConnections, c.connections.size());
    return made->second;
  }

  void Disconnect(Station& c, const std::string& endpoint) {
    auto it = c.connections.find(endpoint);
    if (it == c.connections.end()) return;
    std::vector<uint64_t> request_ids(it->second.request_ids.begin(), it->second.request_ids.end());
    routes_.erase(it->second.route);
    c.connections.erase(it);
    c.counters->Set(kOpenConnections, c.connections.size());
    for (uint64_t request_id : request_ids) {
      Complete(c, request_id,
               Status::Unavailable("request " + std::to_string(request_id) + " to " + endpoint +
                                   ": disconnected"),
               /*later=*/true);
    }
  }

  // Counts a message of `bytes` at its fate: `count` and `count_bytes` of the ledger.
  void Fate(uint64_t MessageLedger::*count, uint64_t MessageLedger::*count_bytes, uint64_t bytes) {
    ++(ledger_.*count);
    ledger_.*count_bytes += bytes;
  }

  // Delivers `frames`, a request of station `id` on connection `route`, to station `server` in
  // `delay`, if both are still there.
  void DeliverAfter(Clock::duration delay, uint64_t id, const std::string& route, uint64_t server,
                    std::vector<Frame> frames) {
    clock_->At(
        clock_->Now() + delay, [this, id, route, server, frames = std::move(frames)]() mutable {
          Station* client = Find(id);
          Station* to = Find(server);
          auto route_of = routes_.find(route);
          Connection* connection = nullptr;
          if (client && to && route_of != routes_.end()) {
            auto it = client->connections.find(*route_of->second.endpoint);
            if (it != client->connections.end()) connection = &it->second;
          }
          if (!connection) {
            return Fate(&MessageLedger::dropped, &MessageLedger::dropped_bytes, TotalBytes(frames));
          }
          Deliver(*client, *connection, *to, std::move(frames));
        });
  }

  // Hands `frames` from client `c` to `server` as the transports' handshake and limits allow.
  void Deliver(Station& c, const Connection& connection, Station& server,
               std::vector<Frame> frames) {
    uint64_t bytes = TotalBytes(frames);
    auto dropped = [&] { Fate(&MessageLedger::dropped, &MessageLedger::dropped_bytes, bytes); };
    if (frames.empty()) return dropped();  // cut to nothing on the way (LinkModel)
    if (c.options.curve.has_value() != server.options.curve.has_value()) {
      return dropped();  // no handshake
    }
    std::string client_key;
    if (c.options.curve) {
      if (server.options.curve->public_key != connection.server_key) {
        return dropped();  // cannot prove it
      }
      client_key = c.options.curve->public_key;
      if (!server.allowed.contains(client_key)) {
        server.counters->Add(kHandshakesRefused);
        return Fate(&MessageLedger::refused, &MessageLedger::refused_bytes, bytes);
      }
    }
    for (const Frame& frame : frames) {
      if (frame.size() > FrameCeiling(server.options.limits)) return dropped();  // by receiver
    }
    server.counters->Add(kRequestsReceived);
    server.counters->Add(kBytesIn, bytes);
    if (frames.size() > server.options.limits.max_frames + 1) {
      frames.resize(server.options.limits.max_frames + 1);
    }
    const std::string& route = connection.route;
    size_t& from_peer = server.inbound_per_route[route];
    if (server.open_inbound.size() >= server.options.max_pending_inbound ||
        from_peer >= server.options.max_pending_inbound_per_peer) {
      if (from_peer == 0) server.inbound_per_route.erase(route);
      server.counters->Add(kInboundRejected);
      Fate(&MessageLedger::refused, &MessageLedger::refused_bytes, bytes);
      SendReply(server, route, TooManyPendingReply(server.options, frames));
      return;
    }
    Fate(&MessageLedger::received, &MessageLedger::received_bytes, bytes);
    ++from_peer;
    uint64_t serial = server.next_serial++;
    server.open_inbound[serial] = route;
    server.counters->Set(kInboundPending, server.open_inbound.size());
    InboundRequest request;
    request.token = ReplyToken{route, serial};
    request.frames = std::move(frames);
    request.bytes = bytes;
    request.peer_public_key = std::move(client_key);
    server.on_request(std::move(request));
  }

  // Sends a reply from `server` back over connection `route`; a vanished client is counted.
  void SendReply(Station& server, const std::string& route, std::vector<Frame> frames) {
    auto owner = routes_.find(route);
    Station* c = owner == routes_.end() ? nullptr : Find(owner->second.client);
    if (!c || frames.empty()) {
      server.counters->Add(kRepliesUndeliverable);
      return;
    }
    server.counters->Add(kRepliesSent);
    server.counters->Add(kBytesOut, TotalBytes(frames));
    std::optional<Clock::duration> duplicate;
    auto delay = Transit(server, *c, frames, /*reply=*/true, duplicate);
    if (!delay) return;  // lost on the way
    if (duplicate) ArriveAfter(*duplicate, c->id, route, frames);
    ArriveAfter(*delay, c->id, route, std::move(frames));
  }

  // A reply on connection `route` arrives at station `client` in `delay`, if it is still there.
  void ArriveAfter(Clock::duration delay, uint64_t client, const std::string& route,
                   std::vector<Frame> frames) {
    clock_->At(clock_->Now() + delay, [this, client, route, frames = std::move(frames)]() mutable {
      if (Station* c = Find(client)) return Arrive(*c, route, std::move(frames));
      Fate(&MessageLedger::dropped, &MessageLedger::dropped_bytes, TotalBytes(frames));
    });
  }

  // A reply on connection `route` arrives at its client `c`.
  void Arrive(Station& c, const std::string& route, std::vector<Frame> frames) {
    const uint64_t bytes = TotalBytes(frames);
    auto dropped = [&] { Fate(&MessageLedger::dropped, &MessageLedger::dropped_bytes, bytes); };
    if (frames.empty()) return dropped();  // cut to nothing on the way (LinkModel)
    auto owner = routes_.find(route);
    for (const Frame& frame : frames) {
      if (frame.size() > FrameCeiling(c.options.limits)) return dropped();  // by receiver
    }
    c.counters->Add(kBytesIn, bytes);
    std::optional<uint64_t> request_id = ReplyRequestId(frames[0], c.options.limits);
    auto connection =
        owner == routes_.end() ? c.connections.end() : c.connections.find(*owner->second.endpoint);
    // Only a reply to a request still pending on this very connection is accepted.
    if (!request_id || connection == c.connections.end() || connection->second.route != route ||
        !connection->second.request_ids.contains(*request_id)) {
      c.counters->Add(kLateRepliesDropped);
      return dropped();
    }
    Fate(&MessageLedger::received, &MessageLedger::received_bytes, bytes);
    c.counters->Add(kRepliesReceived);
    Complete(c, *request_id, std::move(frames));
  }

  // How long `frames` from `from` take to reach `to`, or nullopt when they are lost (the link
  // model's word; no model: no time), and in `duplicate` when a copy arrives. Counts them sent
  // (and lost).
  std::optional<Clock::duration> Transit(const Station& from, const Station& to,
                                         std::vector<Frame>& frames, bool reply,
                                         std::optional<Clock::duration>& duplicate) {
    std::optional<Clock::duration> delay = Clock::duration::zero();
    if (links_) {
      delay =
          links_(LinkMessage{from.options.node_id, to.options.node_id, frames, reply, duplicate});
    }
    const uint64_t bytes = TotalBytes(frames);
    Fate(&MessageLedger::sent, &MessageLedger::sent_bytes, bytes);
    if (!delay) {
      duplicate.reset();
      Fate(&MessageLedger::lost, &MessageLedger::lost_bytes, bytes);
    } else if (duplicate) {
      ++ledger_.duplicated;
      Fate(&MessageLedger::sent, &MessageLedger::sent_bytes, bytes);
    }
    return delay;
  }

  // Calls `on_reply` with `result` as an event of its own.
  void Later(const ReplyHandler& on_reply, Result<std::vector<Frame>> result) {
    clock_->At(clock_->Now(),
               [on_reply, result = std::move(result)]() mutable { on_reply(std::move(result)); });
  }

  // Removes request `request_id` of `c` from every table and calls its handler with `result`, at
  // once or (`later`) as an event of its own.
  void Complete(Station& c, uint64_t request_id, Result<std::vector<Frame>> result,
                bool later = false) {
    auto it = c.pending.find(request_id);
    if (it == c.pending.end()) return;
    Pending pending = std::move(it->second);
    c.pending.erase(it);
    // Rationale: a reply long before the deadline would leave the timer queued until then; a
    // simulation of 100,000 nodes would hold one per request sent in the last deadline's time.
    clock_->Cancel(pending.deadline_timer);
    auto connection = c.connections.find(pending.endpoint);
    if (connection != c.connections.end() && connection->second.route == pending.route) {
      connection->second.request_ids.erase(request_id);
      if (connection->second.request_ids.empty()) BecameIdle(c, connection->second);
    }
    if (later) return Later(pending.on_reply, std::move(result));
    pending.on_reply(std::move(result));
  }

  void Expire(uint64_t id, uint64_t request_id, Clock::time_point deadline) {
    Station* c = Find(id);
    if (!c) return;
    auto it = c->pending.find(request_id);
    if (it == c->pending.end() || it->second.deadline_timer.at != deadline) return;
    c->counters->Add(kTimeouts);
    Complete(*c, request_id,
             Status::Timeout("no reply from " + it->second.endpoint + " before the deadline"));
  }

  void BecameIdle(Station& c, Connection& connection) {
    connection.idle_since = clock_->Now();
    if (c.options.idle_connection_timeout <= Clock::duration::zero()) return;
    uint64_t id = c.id;
    clock_->At(connection.idle_since + c.options.idle_connection_timeout,
               [this, id] { CloseIdleConnections(id); });
  }

  // Closes station `id`'s connections idle for its idle_connection_timeout.
  // Rationale: as ZeroMQ's transport does, so that both count open connections alike.
  void CloseIdleConnections(uint64_t id) {
    Station* c = Find(id);
    if (!c) return;
    Clock::time_point now = clock_->Now();
    for (auto it = c->connections.begin(); it != c->connections.end();) {
      if (it->second.request_ids.empty() &&
          it->second.idle_since + c->options.idle_connection_timeout <= now) {
        routes_.erase(it->second.route);
        it = c->connections.erase(it);
      } else {
        ++it;
      }
    }
    c->counters->Set(kOpenConnections, c->connections.size());
  }

  LinkModel links_;
  MessageLedger ledger_;
  std::unordered_map<uint64_t, std::unique_ptr<Station>> stations_;
  std::unordered_map<std::string, uint64_t> bound_;  // listening endpoint -> station
  std::unordered_map<std::string, Route> routes_;    // connection -> its client
  uint64_t next_station_ = 1;
  uint64_t next_route_ = 1;
  int next_port_ = 40000;
  // Last: destroyed first, so that a real-time clock's thread has stopped before the tables go.
  std::shared_ptr<NetworkClock> clock_;
};

namespace {

class SimulatedTransport final : public Transport {
 public:
  SimulatedTransport(std::shared_ptr<SimulatedNetwork::Core> core, uint64_t station,
                     std::string endpoint, std::shared_ptr<TransportCounters> counters)
      : core_(std::move(core)),
        station_(station),
        endpoint_(std::move(endpoint)),
        counters_(std::move(counters)) {}

  ~SimulatedTransport() override {
    core_->clock().Enter([this] { core_->Unbind(station_); }, /*wait=*/true);
  }

  const std::string& bound_endpoint() const override { return endpoint_; }

  void Request(const std::string& endpoint, uint64_t request_id, std::vector<Frame> frames,
               Clock::time_point deadline, ReplyHandler on_reply,
               const std::string& server_public_key) override {
    core_->clock().Enter(
        [core = core_.get(), station = station_, endpoint, request_id, frames = std::move(frames),
         deadline, on_reply = std::move(on_reply), server_public_key]() mutable {
          core->Request(station, endpoint, request_id, std::move(frames), deadline, on_reply,
                        server_public_key);
        },
        /*wait=*/false);
  }

  void Reply(const ReplyToken& token, std::vector<Frame> frames) override {
    core_->clock().Enter(
        [core = core_.get(), station = station_, token, frames = std::move(frames)]() mutable {
          core->Reply(station, token, std::move(frames));
        },
        /*wait=*/false);
  }

  void Disconnect(const std::string& endpoint) override {
    core_->clock().Enter(
        [core = core_.get(), station = station_, endpoint] { core->Disconnect(station, endpoint); },
        /*wait=*/false);
  }

  TransportStats Stats() const override { return counters_->Load(); }

 private:
  std::shared_ptr<SimulatedNetwork::Core> core_;
  uint64_t station_;
  std::string endpoint_;
  std::shared_ptr<TransportCounters> counters_;
};

}  // namespace

SimulatedNetwork::SimulatedNetwork()
    : core_(std::make_shared<Core>(std::make_shared<RealTimeNetworkClock>(), nullptr)) {}

SimulatedNetwork::SimulatedNetwork(std::shared_ptr<NetworkClock> clock, LinkModel links)
    : core_(std::make_shared<Core>(std::move(clock), std::move(links))) {}

Result<std::unique_ptr<Transport>> SimulatedNetwork::Start(TransportOptions options,
                                                           InboundHandler on_request) const {
  auto counters = std::make_shared<TransportCounters>();
  std::string endpoint;
  Result<uint64_t> station = Status::Internal("not bound");
  core_->clock().Enter(
      [&] {
        station = core_->Bind(std::move(options), std::move(on_request), counters, &endpoint);
      },
      /*wait=*/true);
  if (!station.ok()) return station.status();
  return std::unique_ptr<Transport>(
      std::make_unique<SimulatedTransport>(core_, *station, endpoint, counters));
}

MessageLedger SimulatedNetwork::Ledger() const {
  MessageLedger ledger;
  core_->clock().Enter([&] { ledger = core_->ledger(); }, /*wait=*/true);
  return ledger;
}

TransportFactory SimulatedNetwork::Factory() const {
  SimulatedNetwork network = *this;
  return [network](TransportOptions options, InboundHandler on_request) {
    return network.Start(std::move(options), std::move(on_request));
  };
}

}  // namespace meshlearn::node
