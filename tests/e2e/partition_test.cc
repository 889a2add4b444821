// A network partition between two groups of real node processes (issue 8, "Fault tolerance" d).
// The test builds its own two network namespaces joined by a veth pair, with loopback-range
// addresses (127.10.<k>.1 and .2, route_localnet on) that exist only inside them. It cuts the
// link, checks that both sides keep training, restores it and checks that the mesh heals. Where
// namespaces cannot be created (not root, no CAP_SYS_ADMIN, no `ip`), it fails with the reason.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <map>

#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

constexpr const char* kIp = "/usr/sbin/ip";

// Runs a shell command quietly; true on exit code 0.
bool Sh(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// Two namespaces "<prefix>a" and "<prefix>b" joined by veth "<prefix>va" / "<prefix>vb" with
// 127.10.<k>.1 and 127.10.<k>.2. Removed on destruction.
class TwoHosts {
 public:
  explicit TwoHosts(const std::string& prefix, int k) : prefix_(prefix) {
    a_ip_ = "127.10." + std::to_string(k) + ".1";
    b_ip_ = "127.10." + std::to_string(k) + ".2";
  }
  ~TwoHosts() {
    Sh(std::string(kIp) + " netns del " + ns("a"));
    Sh(std::string(kIp) + " netns del " + ns("b"));
  }
  // Builds both hosts; returns why it could not, or "" on success.
  std::string Create() {
    if (::geteuid() != 0) return "not running as root: cannot create network namespaces";
    if (::access(kIp, X_OK) != 0) return std::string(kIp) + " is missing (package iproute2)";
    if (!Sh(std::string(kIp) + " netns add " + ns("a"))) {
      return "`ip netns add` is not permitted here (no CAP_SYS_ADMIN or no netns support)";
    }
    bool ok = Sh(std::string(kIp) + " netns add " + ns("b")) &&
              Sh(std::string(kIp) + " link add " + dev("a") + " type veth peer name " + dev("b")) &&
              Sh(std::string(kIp) + " link set " + dev("a") + " netns " + ns("a")) &&
              Sh(std::string(kIp) + " link set " + dev("b") + " netns " + ns("b"));
    for (const char* side : {"a", "b"}) {
      std::string ip = std::string(side) == "a" ? a_ip_ : b_ip_;
      ok = ok && In(side, "sysctl -q -w net.ipv4.conf.all.route_localnet=1") &&
           In(side, "sysctl -q -w net.ipv4.conf." + dev(side) + ".route_localnet=1") &&
           In(side, std::string(kIp) + " link set lo up") &&
           In(side, std::string(kIp) + " addr add " + ip + "/24 dev " + dev(side)) &&
           In(side, std::string(kIp) + " link set " + dev(side) + " up");
      // lo carries no 127.0.0.0/8 route here, so the other host's 127.10.k.x goes over the veth.
      In(side, std::string(kIp) + " addr del 127.0.0.1/8 dev lo");
    }
    return ok ? "" : "setting up the veth pair between the namespaces failed";
  }
  // Cuts or restores the link (host a's end down or up).
  bool SetLink(bool up) {
    return In("a", std::string(kIp) + " link set " + dev("a") + (up ? " up" : " down"));
  }
  std::string ns(const std::string& side) const { return prefix_ + side; }
  const std::string& ip(const std::string& side) const { return side == "a" ? a_ip_ : b_ip_; }

 private:
  std::string dev(const std::string& side) const { return prefix_ + "v" + side; }
  bool In(const std::string& side, const std::string& command) {
    return Sh(std::string(kIp) + " netns exec " + ns(side) + " " + command);
  }
  std::string prefix_, a_ip_, b_ip_;
};

// How many models node `dir` got from peers of the other group, from its comm.csv.
int AnsweredAcross(const std::string& dir, const std::set<std::string>& other_group) {
  std::istringstream lines(ReadText(dir + "/comm.csv"));
  std::string line;
  std::getline(lines, line);  // peer,times_sampled,answered
  int answered = 0;
  while (std::getline(lines, line)) {
    std::string peer = line.substr(0, line.find(','));
    if (other_group.count(peer)) answered += std::stoi(line.substr(line.rfind(',') + 1));
  }
  return answered;
}

TEST(NetworkPartition, BothSidesContinueWhileCutAndTheMeshHealsAfterwards) {
  std::string prefix = "ml" + std::to_string(::getpid() % 100000);
  TwoHosts hosts(prefix, static_cast<int>(::getpid() % 200) + 20);
  // On the project's machines namespaces can be made, so a test that cannot make them fails,
  // saying why, rather than passing as skipped.
  std::string why = hosts.Create();
  if (!why.empty()) FAIL() << "network partition test: " << why;
  std::string dir = ::testing::TempDir() + "/e2e_partition";
  std::filesystem::remove_all(dir);
  auto shards = WriteSyntheticShards(dir + "/shards", 4, 1, 6);
  ASSERT_EQ(shards.size(), 4u);
  // a0, a1 on host a; b0, b1 on host b; everyone knows everyone.
  std::vector<std::string> ids = {"a0", "a1", "b0", "b1"};
  std::map<std::string, std::string> endpoint;
  for (int i = 0; i < 4; ++i) {
    endpoint[ids[i]] = "tcp://" + hosts.ip(ids[i].substr(0, 1)) + ":" + std::to_string(25001 + i);
  }
  std::vector<std::optional<ChildProcess>> nodes;
  for (int i = 0; i < 4; ++i) {
    node::NodeConfig c =
        SyntheticNodeConfig(ids[i], endpoint[ids[i]], shards[i], dir + "/" + ids[i]);
    c.training.rounds = 100000;  // stopped by the test
    c.round.min_round_s = 0.3;
    c.round.round_deadline_s = 1.5;
    c.learning.peers_per_round = 2;
    c.round.dead_after_failures = 2;
    for (const std::string& other : ids) {
      if (other != ids[i]) c.peers.push_back({other, endpoint[other]});
    }
    std::string config = WriteConfig(dir + "/" + ids[i] + ".toml", c);
    nodes.push_back(ChildProcess::Start({kIp, "netns", "exec", hosts.ns(ids[i].substr(0, 1)),
                                         MESHLEARN_NODE_BIN, "--config", config},
                                        dir + "/" + ids[i] + ".log"));
    ASSERT_TRUE(nodes.back().has_value());
  }
  const std::set<std::string> group_a = {"a0", "a1"}, group_b = {"b0", "b1"};
  auto across = [&] {
    return AnsweredAcross(dir + "/a0", group_b) + AnsweredAcross(dir + "/b0", group_a);
  };
  ASSERT_TRUE(WaitFor([&] { return LastRound(dir + "/b1") >= 5 && across() > 0; }, seconds(300)))
      << "the groups never exchanged a model before the cut";

  ASSERT_TRUE(hosts.SetLink(false));
  int64_t a_at_cut = LastRound(dir + "/a0"), b_at_cut = LastRound(dir + "/b0");
  // Both sides keep training on their own while cut.
  EXPECT_TRUE(WaitFor([&] { return LastRound(dir + "/a0") >= a_at_cut + 4; }, seconds(300)))
      << "side a stalled during the partition at round " << LastRound(dir + "/a0");
  EXPECT_TRUE(WaitFor([&] { return LastRound(dir + "/b0") >= b_at_cut + 4; }, seconds(300)))
      << "side b stalled during the partition at round " << LastRound(dir + "/b0");
  int across_at_restore = across();

  ASSERT_TRUE(hosts.SetLink(true));
  // The mesh heals: models cross the restored link again.
  EXPECT_TRUE(WaitFor([&] { return across() > across_at_restore; }, seconds(300)))
      << "no model crossed the link after it was restored";
  for (int i = 0; i < 4; ++i) nodes[i]->Signal(SIGTERM);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(ExitedWith(nodes[i]->Wait(seconds(120)), 0)) << ids[i];
    auto rows = Rounds(dir + "/" + ids[i]);
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_EQ(rows[r].round, static_cast<int64_t>(r)) << ids[i] << " row " << r;
    }
  }
}

}  // namespace
}  // namespace meshlearn::e2e
