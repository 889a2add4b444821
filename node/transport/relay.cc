#include "node/transport/relay.h"

#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "node/transport/link_watch.h"
#include "node/transport/transport_rules.h"
#include "node/transport/zmq_sockets.h"
#include "protocol/wire_text.h"

namespace meshlearn::node {
namespace {

using Clock = std::chrono::steady_clock;

// How long a poll waits before the thread looks at its stop flag.
constexpr std::chrono::milliseconds kPollInterval{100};
// A relayed node registers again this often: it tells a relay that lost it (restarted, or a cut
// link) who it is, and keeps a NAT's mapping of the control link alive.
constexpr std::chrono::seconds kRegisterEvery{10};
// Messages read from one socket per poll round, so that one busy circuit cannot starve the rest.
constexpr int kMaxReads = 256;
// A relayed node's local connection id for circuit c is kLocalPrefix + c: ZeroMQ reserves ids
// that start with a zero byte, as the relay's circuit ids do.
constexpr char kLocalPrefix = 'r';

// Sends `parts` as one multipart message without waiting. False when the queue is full or the
// peer has gone (nothing was sent: ZeroMQ accepts all parts of a message or none).
bool SendParts(zmq::socket_t& socket, std::vector<zmq::message_t>& parts) {
  try {
    for (size_t i = 0; i < parts.size(); ++i) {
      zmq::send_flags flags = zmq::send_flags::dontwait;
      if (i + 1 < parts.size()) flags = flags | zmq::send_flags::sndmore;
      if (!socket.send(parts[i], flags)) return false;
    }
    return true;
  } catch (const zmq::error_t&) {
    return false;  // EHOSTUNREACH: the peer's connection is gone
  }
}

zmq::message_t Part(const std::string& text) { return zmq::message_t(text.data(), text.size()); }

// Reads one multipart message, if one is waiting.
std::vector<zmq::message_t> ReadParts(zmq::socket_t& socket) {
  std::vector<zmq::message_t> parts;
  try {
    zmq::message_t part;
    if (!socket.recv(part, zmq::recv_flags::dontwait)) return parts;
    bool more = part.more();
    parts.push_back(std::move(part));
    while (more) {
      zmq::message_t next;
      (void)socket.recv(next, zmq::recv_flags::none);
      more = next.more();
      parts.push_back(std::move(next));
    }
  } catch (const zmq::error_t&) {
    parts.clear();
  }
  return parts;
}

void SetQueues(zmq::socket_t& socket, int high_water_mark) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, high_water_mark);
  socket.set(zmq::sockopt::rcvhwm, high_water_mark);
}

// The counters both ends keep.
struct Counters {
  std::atomic<uint64_t> clients{0}, circuits{0}, clients_refused{0}, circuits_refused{0},
      circuits_cut{0}, bytes_relayed{0};
  RelayStats Load() const {
    return {clients.load(),          circuits.load(),     clients_refused.load(),
            circuits_refused.load(), circuits_cut.load(), bytes_relayed.load()};
  }
};

// ---- the relay ---------------------------------------------------------------------------------

class Server final : public RelayServer {
 public:
  explicit Server(RelayServerOptions options) : options_(std::move(options)) {}
  ~Server() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  Status Start() {
    if (options_.public_host.empty()) {
      return Status::InvalidArgument("relay: the public host (where requesters dial) is empty");
    }
    if (options_.max_clients == 0 || options_.max_circuits == 0) {
      return Status::InvalidArgument("relay: max_clients and max_circuits must be at least 1");
    }
    try {
      if (options_.curve) {
        for (const std::string& key : options_.curve->allowed_public_keys) allowed_.insert(key);
        zap_ = BindZapHandler(context_);
      }
      control_ = zmq::socket_t(context_, zmq::socket_type::router);
      SetQueues(control_, options_.high_water_mark);
      control_.set(zmq::sockopt::router_mandatory, 1);
      if (options_.curve) SetCurveServer(control_, *options_.curve, "meshlearn-relay");
    } catch (const zmq::error_t& error) {
      return Status::Internal(std::string("relay: cannot create its sockets: ") + error.what());
    }
    try {
      control_.bind(options_.control_endpoint);
      control_endpoint_ = control_.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& error) {
      return EndpointError("bind the relay at", options_.control_endpoint, error);
    }
    thread_ = std::thread([this] { Run(); });
    return Status::Ok();
  }

  const std::string& control_endpoint() const override { return control_endpoint_; }
  RelayStats Stats() const override { return counters_.Load(); }

 private:
  // One relayed node.
  struct Client {
    std::string routing_id;  // of its control connection
    zmq::socket_t stream;    // its port: raw TCP from requesters
    std::string endpoint;    // "tcp://<public host>:<port>"
    std::set<std::string> circuits;
  };

  void Run() {
    std::vector<zmq::pollitem_t> items;
    std::vector<Client*> polled;
    while (!stop_) {
      items.clear();
      polled.clear();
      items.push_back({control_.handle(), 0, ZMQ_POLLIN, 0});
      if (zap_) items.push_back({zap_.handle(), 0, ZMQ_POLLIN, 0});
      const size_t first = items.size();
      for (auto& [id, client] : clients_) {
        items.push_back({client.stream.handle(), 0, ZMQ_POLLIN, 0});
        polled.push_back(&client);
      }
      try {
        zmq::poll(items, kPollInterval);
      } catch (const zmq::error_t&) {
        continue;  // EINTR
      }
      if (zap_ && (items[1].revents & ZMQ_POLLIN)) {
        (void)AnswerZapRequests(zap_, allowed_, kMaxReads);
      }
      if (items[0].revents & ZMQ_POLLIN) ReadControl();
      for (size_t i = 0; i < polled.size(); ++i) {
        if (items[first + i].revents & ZMQ_POLLIN) ReadStream(*polled[i]);
      }
    }
  }

  void ReadControl() {
    for (int i = 0; i < kMaxReads; ++i) {
      std::vector<zmq::message_t> parts = ReadParts(control_);
      if (parts.empty()) return;
      if (parts.size() < 2) continue;
      const std::string routing_id = parts[0].to_string();
      const std::string command = parts[1].to_string();
      if (command == "register" && parts.size() == 3) {
        Register(routing_id, parts[2].to_string());
        continue;
      }
      auto owner = by_routing_id_.find(routing_id);
      if (owner == by_routing_id_.end() || parts.size() < 3) continue;  // not a registered node
      Client& client = clients_.at(owner->second);
      const std::string circuit = parts[2].to_string();
      if (!client.circuits.contains(circuit)) continue;  // closed meanwhile
      if (command == "data" && parts.size() == 4) {
        counters_.bytes_relayed += parts[3].size();
        std::vector<zmq::message_t> out;
        out.push_back(Part(circuit));
        out.push_back(std::move(parts[3]));
        if (!SendParts(client.stream, out)) Cut(client, circuit);
      } else if (command == "close") {
        CloseCircuit(client, circuit);
      }
    }
  }

  // Answers `routing_id`'s registration as node `id`: its port (kept from an earlier one), or a
  // refusal when the relay is full or the id is not a node id.
  void Register(const std::string& routing_id, const std::string& id) {
    auto answer = [&](const std::string& word, const std::string& text) {
      std::vector<zmq::message_t> out;
      out.push_back(Part(routing_id));
      out.push_back(Part(word));
      out.push_back(Part(text));
      (void)SendParts(control_, out);
    };
    if (!IsNodeId(id)) return answer("refused", "'" + Printable(id) + "' is not a node id");
    auto known = clients_.find(id);
    if (known == clients_.end()) {
      if (clients_.size() >= options_.max_clients) {
        ++counters_.clients_refused;
        return answer("refused", "the relay is full: " + std::to_string(options_.max_clients) +
                                     " relayed nodes is its limit");
      }
      Client client;
      try {
        client.stream = zmq::socket_t(context_, zmq::socket_type::stream);
        SetQueues(client.stream, options_.high_water_mark);
        client.stream.bind("tcp://" + options_.bind_host + ":0");
        std::string bound = client.stream.get(zmq::sockopt::last_endpoint);
        client.endpoint = "tcp://" + options_.public_host + bound.substr(bound.rfind(':'));
      } catch (const zmq::error_t& error) {
        return answer("refused", std::string("the relay cannot open a port: ") + error.what());
      }
      known = clients_.emplace(id, std::move(client)).first;
      counters_.clients = clients_.size();
    }
    Client& client = known->second;
    if (client.routing_id != routing_id) {
      // A new control link (the node restarted, or its link was cut): the old circuits are dead.
      std::vector<std::string> circuits(client.circuits.begin(), client.circuits.end());
      for (const std::string& circuit : circuits) CloseCircuit(client, circuit);
      by_routing_id_.erase(client.routing_id);
      client.routing_id = routing_id;
      by_routing_id_[routing_id] = id;
    }
    answer("registered", client.endpoint);
  }

  // Bytes or a (dis)connection from requesters at `client`'s port.
  void ReadStream(Client& client) {
    for (int i = 0; i < kMaxReads; ++i) {
      std::vector<zmq::message_t> parts = ReadParts(client.stream);
      if (parts.size() != 2) return;
      const std::string circuit = parts[0].to_string();
      const bool known = client.circuits.contains(circuit);
      if (parts[1].size() == 0) {  // ZMQ_STREAM's notice: connected, or disconnected
        if (known) {
          client.circuits.erase(circuit);
          counters_.circuits -= 1;
          SendControl(client, "close", circuit);
        } else if (client.circuits.size() >= options_.max_circuits) {
          ++counters_.circuits_refused;
          CloseOnStream(client, circuit);
        } else {
          client.circuits.insert(circuit);
          ++counters_.circuits;
          if (!SendControl(client, "open", circuit)) Cut(client, circuit);
        }
        continue;
      }
      if (!known) continue;
      counters_.bytes_relayed += parts[1].size();
      std::vector<zmq::message_t> out;
      out.push_back(Part(client.routing_id));
      out.push_back(Part("data"));
      out.push_back(Part(circuit));
      out.push_back(std::move(parts[1]));
      if (!SendParts(control_, out)) Cut(client, circuit);
    }
  }

  bool SendControl(Client& client, const char* command, const std::string& circuit) {
    std::vector<zmq::message_t> out;
    out.push_back(Part(client.routing_id));
    out.push_back(Part(command));
    out.push_back(Part(circuit));
    return SendParts(control_, out);
  }

  void CloseOnStream(Client& client, const std::string& circuit) {
    std::vector<zmq::message_t> out;
    out.push_back(Part(circuit));
    out.push_back(zmq::message_t());  // an empty frame closes the connection
    (void)SendParts(client.stream, out);
  }

  // Closes `circuit` at the port (its requester is disconnected).
  void CloseCircuit(Client& client, const std::string& circuit) {
    if (client.circuits.erase(circuit) == 0) return;
    counters_.circuits -= 1;
    CloseOnStream(client, circuit);
  }

  // A queue on the way is full: the circuit is closed at both ends, never truncated.
  void Cut(Client& client, const std::string& circuit) {
    if (!client.circuits.contains(circuit)) return;
    ++counters_.circuits_cut;
    (void)SendControl(client, "close", circuit);
    CloseCircuit(client, circuit);
  }

  const RelayServerOptions options_;
  zmq::context_t context_{1};
  zmq::socket_t zap_;  // CURVE only; declared before control_, so closed after it
  zmq::socket_t control_;
  std::set<std::string> allowed_;
  std::string control_endpoint_;
  std::map<std::string, Client> clients_;             // by node id
  std::map<std::string, std::string> by_routing_id_;  // control routing id -> node id
  Counters counters_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ---- the relayed node --------------------------------------------------------------------------

class Client final : public RelayClient {
 public:
  explicit Client(RelayClientOptions options) : options_(std::move(options)) {}
  ~Client() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  Status Start(std::chrono::milliseconds deadline) {
    std::optional<LinkWatch> watch;
    try {
      control_ = zmq::socket_t(context_, zmq::socket_type::dealer);
      SetQueues(control_, options_.high_water_mark);
      if (options_.curve) SetCurveClient(control_, *options_.curve, options_.relay_public_key);
      if (auto started = LinkWatch::Start(context_, control_, 1); started.ok()) {
        watch = std::move(*started);
      }
      control_.connect(options_.relay_endpoint);
      local_ = zmq::socket_t(context_, zmq::socket_type::stream);
      SetQueues(local_, options_.high_water_mark);
      local_.set(zmq::sockopt::reconnect_ivl, -1);  // a closed circuit stays closed
    } catch (const zmq::error_t& error) {
      return EndpointError("connect to the relay at", options_.relay_endpoint, error);
    }
    SendRegister();
    const Clock::time_point until = Clock::now() + deadline;
    while (Clock::now() < until) {
      std::vector<zmq::pollitem_t> items = {{control_.handle(), 0, ZMQ_POLLIN, 0}};
      try {
        zmq::poll(items, kPollInterval);
      } catch (const zmq::error_t&) {
        continue;
      }
      if (watch) (void)watch->ReadEvents();
      std::vector<zmq::message_t> parts = ReadParts(control_);
      if (parts.size() != 2) continue;
      const std::string word = parts[0].to_string();
      if (word == "registered") {
        relayed_endpoint_ = parts[1].to_string();
        if (watch) watch->Stop(control_);
        thread_ = std::thread([this] { Run(); });
        return Status::Ok();
      }
      if (word == "refused") {
        return Status::Refused("the relay at " + options_.relay_endpoint +
                               " refused this node: " + Printable(parts[1].to_string()));
      }
    }
    std::string why = watch ? DescribeLink(watch->evidence(), options_.relay_endpoint,
                                           options_.curve ? options_.curve->public_key : "")
                            : "";
    if (watch) watch->Stop(control_);
    return Status::Unavailable("the relay at " + options_.relay_endpoint +
                               " did not answer this node's registration in time" +
                               (why.empty() ? "" : ": " + why));
  }

  const std::string& relayed_endpoint() const override { return relayed_endpoint_; }
  RelayStats Stats() const override { return counters_.Load(); }

 private:
  // One circuit: a connection to this node's own listen socket.
  struct Circuit {
    bool connected = false;               // the local connection is up
    std::vector<zmq::message_t> waiting;  // bytes that came before it was
  };

  void SendRegister() {
    std::vector<zmq::message_t> out;
    out.push_back(Part("register"));
    out.push_back(Part(options_.node_id));
    (void)SendParts(control_, out);
    last_register_ = Clock::now();
  }

  void Run() {
    while (!stop_) {
      std::vector<zmq::pollitem_t> items = {{control_.handle(), 0, ZMQ_POLLIN, 0},
                                            {local_.handle(), 0, ZMQ_POLLIN, 0}};
      try {
        zmq::poll(items, kPollInterval);
      } catch (const zmq::error_t&) {
        continue;
      }
      if (items[0].revents & ZMQ_POLLIN) ReadControl();
      if (items[1].revents & ZMQ_POLLIN) ReadLocal();
      if (Clock::now() - last_register_ >= kRegisterEvery) SendRegister();
    }
  }

  void ReadControl() {
    for (int i = 0; i < kMaxReads; ++i) {
      std::vector<zmq::message_t> parts = ReadParts(control_);
      if (parts.empty()) return;
      if (parts.size() < 2) continue;
      const std::string word = parts[0].to_string();
      const std::string circuit = parts[1].to_string();
      if (word == "open" && !circuits_.contains(circuit)) {
        try {
          local_.set(zmq::sockopt::connect_routing_id, kLocalPrefix + circuit);
          local_.connect(options_.local_endpoint);
        } catch (const zmq::error_t&) {
          SendControl("close", circuit);
          continue;
        }
        circuits_[circuit];
        counters_.circuits = circuits_.size();
      } else if (word == "data" && parts.size() == 3) {
        auto it = circuits_.find(circuit);
        if (it == circuits_.end()) continue;
        counters_.bytes_relayed += parts[2].size();
        if (!it->second.connected) {
          if (it->second.waiting.size() >= static_cast<size_t>(options_.high_water_mark)) {
            Cut(circuit);
          } else {
            it->second.waiting.push_back(std::move(parts[2]));
          }
          continue;
        }
        if (!SendLocal(circuit, std::move(parts[2]))) Cut(circuit);
      } else if (word == "close") {
        CloseLocal(circuit);
      }
    }
  }

  void ReadLocal() {
    for (int i = 0; i < kMaxReads; ++i) {
      std::vector<zmq::message_t> parts = ReadParts(local_);
      if (parts.size() != 2) return;
      const std::string local_id = parts[0].to_string();
      if (local_id.empty() || local_id[0] != kLocalPrefix) continue;
      const std::string circuit = local_id.substr(1);
      auto it = circuits_.find(circuit);
      if (it == circuits_.end()) continue;
      if (parts[1].size() == 0) {  // ZMQ_STREAM's notice: connected, or disconnected
        if (it->second.connected) {
          circuits_.erase(it);
          counters_.circuits = circuits_.size();
          SendControl("close", circuit);
          continue;
        }
        it->second.connected = true;
        std::vector<zmq::message_t> waiting = std::move(it->second.waiting);
        for (zmq::message_t& bytes : waiting) {
          if (!SendLocal(circuit, std::move(bytes))) {
            Cut(circuit);
            break;
          }
        }
        continue;
      }
      counters_.bytes_relayed += parts[1].size();
      std::vector<zmq::message_t> out;
      out.push_back(Part("data"));
      out.push_back(Part(circuit));
      out.push_back(std::move(parts[1]));
      if (!SendParts(control_, out)) Cut(circuit);
    }
  }

  bool SendLocal(const std::string& circuit, zmq::message_t bytes) {
    std::vector<zmq::message_t> out;
    out.push_back(Part(kLocalPrefix + circuit));
    out.push_back(std::move(bytes));
    return SendParts(local_, out);
  }

  void SendControl(const char* word, const std::string& circuit) {
    std::vector<zmq::message_t> out;
    out.push_back(Part(word));
    out.push_back(Part(circuit));
    (void)SendParts(control_, out);
  }

  // Closes the local connection of `circuit` and forgets it.
  void CloseLocal(const std::string& circuit) {
    auto it = circuits_.find(circuit);
    if (it == circuits_.end()) return;
    if (it->second.connected) (void)SendLocal(circuit, zmq::message_t());  // empty: close
    circuits_.erase(it);
    counters_.circuits = circuits_.size();
  }

  // A queue on the way is full: the circuit is closed at both ends, never truncated.
  void Cut(const std::string& circuit) {
    if (!circuits_.contains(circuit)) return;
    ++counters_.circuits_cut;
    SendControl("close", circuit);
    CloseLocal(circuit);
  }

  const RelayClientOptions options_;
  zmq::context_t context_{1};
  zmq::socket_t control_;
  zmq::socket_t local_;
  std::string relayed_endpoint_;
  std::map<std::string, Circuit> circuits_;
  Clock::time_point last_register_;
  Counters counters_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<RelayServer>> StartRelayServer(RelayServerOptions options) {
  auto server = std::make_unique<Server>(std::move(options));
  MESHLEARN_RETURN_IF_ERROR(server->Start());
  return std::unique_ptr<RelayServer>(std::move(server));
}

Result<std::unique_ptr<RelayClient>> StartRelayClient(RelayClientOptions options,
                                                      std::chrono::milliseconds deadline) {
  auto client = std::make_unique<Client>(std::move(options));
  MESHLEARN_RETURN_IF_ERROR(client->Start(deadline));
  return std::unique_ptr<RelayClient>(std::move(client));
}

}  // namespace meshlearn::node
