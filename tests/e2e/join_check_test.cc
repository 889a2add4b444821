// `meshlearn-node --check-join` (node/host/join_check.h) against real node processes, one test per
// cause a join can fail for, and the same words in a running node's log and /status (issue 59,
// item 4). Every node listens on loopback; the unreachable address is made by a network namespace
// that the test creates and removes, with an iptables rule that drops the packets.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "node/host/status_document.h"
#include "process/http_server.h"
#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

constexpr const char* kIp = "/usr/sbin/ip";
constexpr const char* kIptables = "/usr/sbin/iptables";

// CURVE for a node with `keys`, admitting `allowed`.
node::SecuritySection Curve(const NodeKeyFiles& keys, std::vector<std::string> allowed) {
  node::SecuritySection security;
  security.secret_key_file = keys.secret_key_file;
  security.allowed_keys = std::move(allowed);
  return security;
}

// Each test's folder, with a synthetic shard for the host and one for the newcomer.
class CheckJoin : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/e2e_check_join_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    shards_ = WriteSyntheticShards(dir_ + "/shards", 2, 1, 5);
    ASSERT_EQ(shards_.size(), 2u);
  }

  // A node that waits to be greeted (a mesh of 2, no [[peers]]) far longer than a test runs.
  node::NodeConfig HostConfig(const std::string& id = "host") {
    node::NodeConfig c =
        SyntheticNodeConfig(id, FreeEndpoint("127.0.0.1"), shards_[0], dir_ + "/" + id);
    c.mesh_size = 2;
    c.training.rounds = 100000;
    return c;
  }

  // The node whose join is checked: it knows `peer` only.
  node::NodeConfig NewcomerConfig(const node::PeerAddress& peer) {
    node::NodeConfig c =
        SyntheticNodeConfig("newcomer", FreeEndpoint("127.0.0.1"), shards_[1], dir_ + "/newcomer");
    c.peers = {peer};
    return c;
  }

  // Starts the node of `config` and waits until its log says it listens.
  std::optional<ChildProcess> StartNode(const node::NodeConfig& config) {
    std::string log = dir_ + "/" + config.id + ".log";
    auto child = ChildProcess::Start(
        {MESHLEARN_NODE_BIN, "--config", WriteConfig(dir_ + "/" + config.id + ".toml", config)},
        log);
    EXPECT_TRUE(child.has_value());
    EXPECT_TRUE(WaitFor([&] { return ReadText(log).find("listening on") != std::string::npos; },
                        seconds(60)))
        << ReadText(log);
    return child;
  }

  // Runs `meshlearn-node --check-join` on `config`, after `wrapper` (e.g. `ip netns exec ns`).
  Finished RunCheck(const node::NodeConfig& config, std::vector<std::string> wrapper = {}) {
    std::vector<std::string> args = std::move(wrapper);
    for (std::string arg :
         {std::string(MESHLEARN_NODE_BIN), std::string("--config"),
          WriteConfig(dir_ + "/newcomer.toml", config), std::string("--check-join")}) {
      args.push_back(std::move(arg));
    }
    return RunToEnd(args, dir_ + "/check.log", seconds(120));
  }

  std::string dir_;
  std::vector<std::string> shards_;
};

// Expects the check to have failed (exit code 1) with `words` among its findings.
void ExpectFailedWith(const Finished& check, const std::string& words) {
  EXPECT_TRUE(ExitedWith(check.status, 1)) << check.log;
  EXPECT_NE(check.log.find(words), std::string::npos) << "expected: " << words << "\n" << check.log;
}

// The line of `text` that starts with `start`, or "".
std::string LineStarting(const std::string& text, const std::string& start) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(start, 0) == 0) return line;
  }
  return "";
}

TEST_F(CheckJoin, APeerThatAdmitsAndReachesUsIsOk) {
  node::NodeConfig host = HostConfig();
  auto running = StartNode(host);
  ASSERT_TRUE(running);
  Finished check = RunCheck(NewcomerConfig({"host", host.listen}));
  EXPECT_TRUE(ExitedWith(check.status, 0)) << check.log;
  EXPECT_EQ(LineStarting(check.log, "peer host"), "peer host at " + host.listen + ": ok")
      << check.log;
  EXPECT_NE(check.log.find("answered our Hello as host (protocol version 3"), std::string::npos)
      << check.log;
  EXPECT_NE(check.log.find("greeted this node back at"), std::string::npos) << check.log;
  EXPECT_NE(check.log.find("join check: 1 of 1 peers ok"), std::string::npos) << check.log;
}

TEST_F(CheckJoin, AClosedPortSaysNothingAcceptsTcpConnectionsThere) {
  std::string closed = FreeEndpoint("127.0.0.1");
  node::NodeConfig newcomer = NewcomerConfig({"host", closed});
  newcomer.round.round_deadline_s = 2;
  Finished check = RunCheck(newcomer);
  EXPECT_TRUE(ExitedWith(check.status, 1)) << check.log;
  EXPECT_EQ(LineStarting(check.log, "peer host"), "peer host at " + closed + ": FAILED")
      << check.log;
  EXPECT_NE(check.log.find("nothing accepts TCP connections at " + closed.substr(6)),
            std::string::npos)
      << check.log;
}

TEST_F(CheckJoin, AnAddressWhosePacketsAreDroppedSaysItDoesNotAnswer) {
  if (::geteuid() != 0 || ::access(kIp, X_OK) != 0 || ::access(kIptables, X_OK) != 0) {
    FAIL() << "needs root, " << kIp << " (iproute2) and " << kIptables
           << " (iptables) to make a namespace whose packets to one port are dropped";
  }
  const std::string ns = "mljoin" + std::to_string(::getpid() % 100000);
  auto sh = [](const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
  };
  ASSERT_TRUE(sh(std::string(kIp) + " netns add " + ns)) << "ip netns add " << ns;
  struct Remove {
    std::string command;
    ~Remove() { (void)std::system((command + " >/dev/null 2>&1").c_str()); }
  } remove{std::string(kIp) + " netns del " + ns};
  const std::string in_ns = std::string(kIp) + " netns exec " + ns + " ";
  const std::string dropped = "tcp://127.0.0.1:40999";
  ASSERT_TRUE(sh(in_ns + kIp + " link set lo up"));
  ASSERT_TRUE(sh(in_ns + kIptables + " -A OUTPUT -p tcp --dport 40999 -j DROP"));
  node::NodeConfig newcomer = NewcomerConfig({"host", dropped});
  newcomer.listen = "tcp://127.0.0.1:40998";  // inside the namespace: free
  newcomer.round.round_deadline_s = 2;
  Finished check = RunCheck(newcomer, {kIp, "netns", "exec", ns});
  ExpectFailedWith(check,
                   "the TCP connection to 127.0.0.1:40999 did not open in time: the "
                   "address does not answer");
}

TEST_F(CheckJoin, AKeyOffThePeersAllowlistSaysThePeerRefusedOurKey) {
  NodeKeyFiles host_keys = MakeKeys(dir_ + "/keys", "host");
  NodeKeyFiles newcomer_keys = MakeKeys(dir_ + "/keys", "newcomer");
  NodeKeyFiles friend_keys = MakeKeys(dir_ + "/keys", "friend");
  node::NodeConfig host = HostConfig();
  host.security = Curve(host_keys, {friend_keys.public_key});  // not the newcomer's
  auto running = StartNode(host);
  ASSERT_TRUE(running);
  node::NodeConfig newcomer = NewcomerConfig({"host", host.listen, host_keys.public_key});
  newcomer.security = Curve(newcomer_keys, {host_keys.public_key});
  newcomer.round.round_deadline_s = 2;
  Finished check = RunCheck(newcomer);
  ExpectFailedWith(check, "refused this node's CURVE public key " + newcomer_keys.public_key +
                              " (ZAP status 400): its allowlist lacks the key");
}

TEST_F(CheckJoin, AWrongKeyForThePeerSaysItIsNotItsKey) {
  NodeKeyFiles host_keys = MakeKeys(dir_ + "/keys", "host");
  NodeKeyFiles newcomer_keys = MakeKeys(dir_ + "/keys", "newcomer");
  NodeKeyFiles stale = MakeKeys(dir_ + "/keys", "stale");  // e.g. the host's key before a keygen
  node::NodeConfig host = HostConfig();
  host.security = Curve(host_keys, {newcomer_keys.public_key});
  auto running = StartNode(host);
  ASSERT_TRUE(running);
  node::NodeConfig newcomer = NewcomerConfig({"host", host.listen, stale.public_key});
  newcomer.security = Curve(newcomer_keys, {stale.public_key});
  newcomer.round.round_deadline_s = 2;
  Finished check = RunCheck(newcomer);
  ExpectFailedWith(check, "the public key this node holds for it is not its key");
}

TEST_F(CheckJoin, PlainTextAgainstCurveSaysOneSideHasNoSecuritySection) {
  NodeKeyFiles host_keys = MakeKeys(dir_ + "/keys", "host");
  node::NodeConfig host = HostConfig();
  host.security = Curve(host_keys, {host_keys.public_key});
  auto running = StartNode(host);
  ASSERT_TRUE(running);
  node::NodeConfig newcomer = NewcomerConfig({"host", host.listen});
  newcomer.round.round_deadline_s = 2;
  Finished check = RunCheck(newcomer);
  ExpectFailedWith(check, "requires CURVE ([security]) and this node speaks plain text");
}

TEST_F(CheckJoin, APeerOfAnotherProtocolVersionSaysWhichVersionsEachSpeaks) {
  std::string future = FreeEndpoint("127.0.0.1");
  std::string log = dir_ + "/future.log";
  auto peer = ChildProcess::Start(
      {"/usr/bin/python3", MESHLEARN_SOURCE_DIR "/tests/e2e/future_peer.py", future}, log);
  ASSERT_TRUE(peer);
  ASSERT_TRUE(
      WaitFor([&] { return ReadText(log).find("listening") != std::string::npos; }, seconds(30)))
      << ReadText(log);
  Finished check = RunCheck(NewcomerConfig({"future", future}));
  ExpectFailedWith(check,
                   "its answer is in a protocol version this build cannot read: peer "
                   "speaks protocol versions 4..5, this node speaks 1..3");
}

TEST_F(CheckJoin, AnotherNodeAtThePeersAddressSaysWhoAnswered) {
  node::NodeConfig host = HostConfig("carol");
  auto running = StartNode(host);
  ASSERT_TRUE(running);
  Finished check = RunCheck(NewcomerConfig({"host", host.listen}));
  ExpectFailedWith(check, "the node at " + host.listen + " answers as 'carol', not 'host'");
}

TEST_F(CheckJoin, ANewcomerThePeerCannotReachBackIsToldItNeedsAReachableAddress) {
  node::NodeConfig host = HostConfig();
  auto running = StartNode(host);
  ASSERT_TRUE(running);
  node::NodeConfig newcomer = NewcomerConfig({"host", host.listen});
  // As behind NAT: the newcomer reaches the host, but the address it gives is not its own.
  newcomer.advertise = FreeEndpoint("127.0.0.1");
  Finished check = RunCheck(newcomer);
  ExpectFailedWith(check, "answered our Hello as host");
  EXPECT_NE(check.log.find("it did not greet this node back at " + newcomer.advertise +
                           " within 5.0 s: it cannot reach this node there"),
            std::string::npos)
      << check.log;
}

TEST_F(CheckJoin, APeerThatAdvertisesAnAddressWhereItDoesNotAnswerIsUnreachableByGossip) {
  node::NodeConfig host = HostConfig();
  host.advertise = FreeEndpoint("127.0.0.1");  // nothing listens there
  auto running = StartNode(host);
  ASSERT_TRUE(running);
  node::NodeConfig newcomer = NewcomerConfig({"host", host.listen});
  newcomer.round.round_deadline_s = 2;
  Finished check = RunCheck(newcomer);
  ExpectFailedWith(check, "it advertises itself at " + host.advertise +
                              ", where it does not answer (no reply from " + host.advertise +
                              " before the deadline: nothing accepts TCP connections");
  EXPECT_NE(check.log.find("the nodes that learn of it by gossip cannot reach it"),
            std::string::npos)
      << check.log;
}

TEST_F(CheckJoin, ARunningNodeWhoseJoinFailsSaysWhyInItsLogAndStatus) {
  std::string closed = FreeEndpoint("127.0.0.1");
  node::NodeConfig newcomer = NewcomerConfig({"host", closed});
  newcomer.round.round_deadline_s = 2;
  auto http = node::FindFreeTcpPort("127.0.0.1");
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  newcomer.http_port = *http;
  auto running = StartNode(newcomer);
  ASSERT_TRUE(running);
  const std::string log = dir_ + "/newcomer.log";
  const std::string words = "nothing accepts TCP connections at " + closed.substr(6);
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadText(log).find("cannot join peer host at " + closed + ": no reply from " +
                                  closed + " before the deadline: " + words) != std::string::npos;
      },
      seconds(60)))
      << ReadText(log);
  // /status shows the same words beside the peer.
  std::string problem;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto body = node::HttpGet("127.0.0.1", *http, "/status", 2000);
        auto status =
            body.ok() ? node::ParseStatusJson(*body) : Result<node::NodeStatus>(body.status());
        if (!status.ok()) return false;
        for (const node::PeerStatus& peer : status->peers) {
          if (peer.id == "host") problem = peer.problem;
        }
        return problem.find(words) != std::string::npos;
      },
      seconds(30)))
      << "the peer's problem in /status: '" << problem << "'";
}

}  // namespace
}  // namespace meshlearn::e2e
