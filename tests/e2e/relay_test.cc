// Relays for nodes behind NAT (node/transport/relay.h; issue 59, item 3) over real node processes
// in network namespaces that the test creates and removes: two nodes, each behind its own NAT
// (iptables masquerade, new connections from outside dropped), and one reachable node that
// serves as their relay train together, with CURVE end to end. Without the relay, --check-join
// says that the reachable node cannot greet a NATed node back; with it, the check passes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

constexpr const char* kIp = "/usr/sbin/ip";
constexpr const char* kIptables = "/usr/sbin/iptables";

bool Sh(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// The networks: namespace "<p>net" routes between the public side and two private ones and
// masquerades them; "<p>pub" holds the reachable node (10.77.0.2), "<p>a" and "<p>b" one NATed node
// each (192.168.1.2, 192.168.2.2). A connection into a private network from outside it is
// dropped, as a home router's NAT does. Removed on destruction.
class NatNetworks {
 public:
  explicit NatNetworks(std::string prefix) : p_(std::move(prefix)) {}
  ~NatNetworks() {
    for (const char* name : {"net", "pub", "a", "b"})
      Sh(std::string(kIp) + " netns del " + p_ + name);
  }
  // Builds the networks; returns why it could not, or "".
  std::string Create() {
    if (::geteuid() != 0) return "not running as root: cannot create network namespaces";
    if (::access(kIp, X_OK) != 0) return std::string(kIp) + " is missing (package iproute2)";
    if (::access(kIptables, X_OK) != 0) return std::string(kIptables) + " is missing (iptables)";
    bool ok = true;
    for (const char* name : {"net", "pub", "a", "b"}) {
      ok = ok && Sh(std::string(kIp) + " netns add " + p_ + name) &&
           In(name, std::string(kIp) + " link set lo up");
    }
    if (!ok) return "`ip netns add` is not permitted here (no CAP_SYS_ADMIN or no netns support)";
    // net <-> pub: 10.77.0.1 / .2; net <-> a: 192.168.1.1 / .2; net <-> b: 192.168.2.1 / .2.
    ok = Link("pub", "10.77.0.1", "10.77.0.2") && Link("a", "192.168.1.1", "192.168.1.2") &&
         Link("b", "192.168.2.1", "192.168.2.2") &&
         In("net", "sysctl -q -w net.ipv4.ip_forward=1") &&
         In("net", std::string(kIptables) + " -t nat -A POSTROUTING -s 192.168.0.0/16 -o " + p_ +
                       "npub -j MASQUERADE") &&
         In("net", std::string(kIptables) +
                       " -A FORWARD -d 192.168.0.0/16 -m conntrack --ctstate NEW -j DROP");
    return ok ? "" : "setting up the NAT between the namespaces failed";
  }
  std::string ns(const std::string& name) const { return p_ + name; }

 private:
  // A veth from "net" (address `gateway`) to `name` (address `address`, default route via it).
  bool Link(const std::string& name, const std::string& gateway, const std::string& address) {
    const std::string outer = p_ + "n" + name, inner = p_ + "i" + name;
    return Sh(std::string(kIp) + " link add " + outer + " type veth peer name " + inner) &&
           Sh(std::string(kIp) + " link set " + outer + " netns " + p_ + "net") &&
           Sh(std::string(kIp) + " link set " + inner + " netns " + p_ + name) &&
           In("net", std::string(kIp) + " addr add " + gateway + "/24 dev " + outer) &&
           In("net", std::string(kIp) + " link set " + outer + " up") &&
           In(name, std::string(kIp) + " addr add " + address + "/24 dev " + inner) &&
           In(name, std::string(kIp) + " link set " + inner + " up") &&
           In(name, std::string(kIp) + " route add default via " + gateway);
  }
  bool In(const std::string& name, const std::string& command) {
    return Sh(std::string(kIp) + " netns exec " + p_ + name + " " + command);
  }
  std::string p_;
};

TEST(Relay, TwoNodesBehindNatAndOneReachableNodeTrainTogetherThroughItsRelay) {
  const std::string prefix = "mlr" + std::to_string(::getpid() % 100000);
  NatNetworks networks(prefix);
  if (std::string why = networks.Create(); !why.empty()) FAIL() << why;
  const std::string dir = ::testing::TempDir() + "/e2e_relay_nat";
  std::filesystem::remove_all(dir);
  auto shards = WriteSyntheticShards(dir + "/shards", 3, 1, 7);
  ASSERT_EQ(shards.size(), 3u);
  const std::vector<std::string> ids = {"hub", "alice", "bob"};
  const std::map<std::string, std::string> where = {{"hub", "pub"}, {"alice", "a"}, {"bob", "b"}};
  const std::map<std::string, std::string> listen = {{"hub", "tcp://10.77.0.2:25100"},
                                                     {"alice", "tcp://192.168.1.2:25101"},
                                                     {"bob", "tcp://192.168.2.2:25102"}};
  const std::string relay = "tcp://10.77.0.2:26000";
  std::map<std::string, NodeKeyFiles> keys;
  std::vector<std::string> all_keys;
  for (const std::string& id : ids) {
    keys[id] = MakeKeys(dir + "/keys", id);
    all_keys.push_back(keys[id].public_key + " " + id);
  }
  constexpr int kRounds = 15;
  auto config_of = [&](const std::string& id, bool relayed) {
    const size_t index = std::find(ids.begin(), ids.end(), id) - ids.begin();
    node::NodeConfig c = SyntheticNodeConfig(id, listen.at(id), shards[index], dir + "/" + id);
    c.training.rounds = kRounds;
    c.round.min_round_s = 0.3;
    c.learning.peers_per_round = 2;
    c.learning.sampler = topology::SamplerKind::kRandom;
    node::SecuritySection security;
    security.secret_key_file = keys[id].secret_key_file;
    security.allowed_keys = all_keys;
    c.security = security;
    if (id == "hub") {
      c.mesh_size = 3;  // it waits to be greeted
      c.relay.serve_at = relay;
    } else {
      c.peers = {{"hub", listen.at("hub"), keys["hub"].public_key}};
      if (relayed) {
        c.relay.via = relay;
        c.relay.via_public_key = keys["hub"].public_key;
      }
    }
    return c;
  };
  auto in = [&](const std::string& id) {
    return std::vector<std::string>{kIp, "netns", "exec", networks.ns(where.at(id))};
  };
  auto start = [&](const node::NodeConfig& c) {
    std::vector<std::string> args = in(c.id);
    for (std::string arg : {std::string(MESHLEARN_NODE_BIN), std::string("--config"),
                            WriteConfig(dir + "/" + c.id + ".toml", c)}) {
      args.push_back(arg);
    }
    return ChildProcess::Start(args, dir + "/" + c.id + ".log");
  };
  auto check_join = [&](const node::NodeConfig& c) {
    std::vector<std::string> args = in(c.id);
    for (std::string arg :
         {std::string(MESHLEARN_NODE_BIN), std::string("--config"),
          WriteConfig(dir + "/" + c.id + "-check.toml", c), std::string("--check-join")}) {
      args.push_back(arg);
    }
    return RunToEnd(args, dir + "/" + c.id + "-check.log", seconds(120));
  };

  auto hub = start(config_of("hub", false));
  ASSERT_TRUE(hub);
  ASSERT_TRUE(WaitFor(
      [&] { return ReadText(dir + "/hub.log").find("serving as a relay") != std::string::npos; },
      seconds(60)))
      << ReadText(dir + "/hub.log");

  // Without the relay, the hub cannot greet alice back: she is behind NAT.
  Finished unrelayed = check_join(config_of("alice", false));
  EXPECT_TRUE(ExitedWith(unrelayed.status, 1)) << unrelayed.log;
  EXPECT_NE(unrelayed.log.find("it did not greet this node back at tcp://192.168.1.2:25101"),
            std::string::npos)
      << unrelayed.log;
  // Through it, it can.
  Finished relayed = check_join(config_of("alice", true));
  EXPECT_TRUE(ExitedWith(relayed.status, 0)) << relayed.log;
  EXPECT_NE(relayed.log.find("advertised as tcp://10.77.0.2:"), std::string::npos) << relayed.log;

  auto alice = start(config_of("alice", true));
  auto bob = start(config_of("bob", true));
  ASSERT_TRUE(alice && bob);
  for (auto* child : {&*hub, &*alice, &*bob}) {
    EXPECT_TRUE(ExitedWith(child->Wait(seconds(240)), 0));
  }
  for (const std::string& id : ids) {
    const std::string log = ReadText(dir + "/" + id + ".log");
    EXPECT_EQ(LastRound(dir + "/" + id), kRounds) << id << ":\n" << log;
    std::map<std::string, std::pair<int, int>> comm = Comm(dir + "/" + id);
    for (const std::string& other : ids) {
      if (other == id) continue;
      // Every pair exchanged models: the NATed pair only through the hub's relay ports.
      EXPECT_GT(comm[other].second, 0) << id << " got no model from " << other << ":\n" << log;
    }
  }
  EXPECT_NE(ReadText(dir + "/alice.log").find("behind the relay at " + relay), std::string::npos);
}

}  // namespace
}  // namespace meshlearn::e2e
