// [security] end to end: meshlearn-keygen, and meshlearn-node processes that encrypt and admit
// only allowlisted keys. A node whose key is not on the others' allowlists gets nothing.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "node/transport/curve_keys.h"
#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

// Runs meshlearn-keygen with `args`; returns its exit status and its output.
std::pair<std::optional<int>, std::string> Keygen(const std::vector<std::string>& args,
                                                  const std::string& log) {
  std::filesystem::create_directories(std::filesystem::path(log).parent_path());
  std::filesystem::remove(log);
  std::vector<std::string> command = {MESHLEARN_KEYGEN_BIN};
  command.insert(command.end(), args.begin(), args.end());
  auto child = ChildProcess::Start(command, log);
  EXPECT_TRUE(child.has_value());
  if (!child) return {std::nullopt, ""};
  auto status = child->Wait(seconds(30));
  return {status, ReadText(log)};
}

// The public key in `<dir>/<name>.pub`, written by meshlearn-keygen.
std::string PublicKeyOf(const std::string& dir, const std::string& name) {
  auto keys = node::ReadPublicKeysFile(dir + "/" + name + ".pub");
  EXPECT_TRUE(keys.ok() && keys->size() == 1) << keys.status().ToString();
  return keys.ok() && !keys->empty() ? keys->front() : "";
}

mode_t ModeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST(Keygen, WritesAPrivateSecretKeyAndItsPublicKeyAndNeverOverwritesWithoutForce) {
  std::string dir = ::testing::TempDir() + "/e2e_keygen";
  std::filesystem::remove_all(dir);
  auto [status, output] = Keygen({"--name", "alpha", "--out", dir + "/keys"}, dir + ".log");
  ASSERT_TRUE(ExitedWith(status, 0)) << output;
  std::string secret = dir + "/keys/alpha.key";
  EXPECT_EQ(ModeOf(secret), 0600u);
  auto pair = node::ReadSecretKeyFile(secret);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  std::string public_key = PublicKeyOf(dir + "/keys", "alpha");
  EXPECT_EQ(pair->public_key, public_key) << "the .pub file belongs to the .key file";
  EXPECT_NE(output.find(public_key + "\n"), std::string::npos) << "prints the public key:\n"
                                                               << output;

  auto [again, refusal] = Keygen({"--name", "alpha", "--out", dir + "/keys"}, dir + ".log");
  EXPECT_TRUE(ExitedWith(again, 1)) << refusal;
  EXPECT_NE(refusal.find("already exists"), std::string::npos) << refusal;
  EXPECT_EQ(node::ReadSecretKeyFile(secret)->secret_key, pair->secret_key) << "left untouched";

  auto [forced, replaced] =
      Keygen({"--name", "alpha", "--out", dir + "/keys", "--force"}, dir + ".log");
  EXPECT_TRUE(ExitedWith(forced, 0)) << replaced;
  EXPECT_EQ(ModeOf(secret), 0600u);
  EXPECT_NE(node::ReadSecretKeyFile(secret)->secret_key, pair->secret_key);
}

// Issue 17, item 6: a .pub file binds its key to a node id (NAME unless --id says otherwise), so
// that `cat *.pub` gives an allowlist naming which id may use which key.
TEST(Keygen, ThePublicKeyFileBindsTheKeyToTheNodeId) {
  std::string dir = ::testing::TempDir() + "/e2e_keygen_id";
  std::filesystem::remove_all(dir);
  auto [named, named_output] = Keygen({"--name", "alpha", "--out", dir}, dir + "/a.log");
  ASSERT_TRUE(ExitedWith(named, 0)) << named_output;
  auto alpha = node::ReadAllowlistFile(dir + "/alpha.pub");
  ASSERT_TRUE(alpha.ok()) << alpha.status().ToString();
  ASSERT_EQ(alpha->size(), 1u);
  EXPECT_EQ(alpha->front().node_id, "alpha");
  auto [explicit_id, explicit_output] =
      Keygen({"--name", "laptop", "--id", "node-7", "--out", dir}, dir + "/b.log");
  ASSERT_TRUE(ExitedWith(explicit_id, 0)) << explicit_output;
  EXPECT_EQ(node::ReadAllowlistFile(dir + "/laptop.pub")->front().node_id, "node-7");
  auto [unbound, unbound_output] =
      Keygen({"--name", "spare", "--id", "", "--out", dir}, dir + "/c.log");
  ASSERT_TRUE(ExitedWith(unbound, 0)) << unbound_output;
  EXPECT_EQ(node::ReadAllowlistFile(dir + "/spare.pub")->front().node_id, "");
  auto [bad, bad_output] = Keygen({"--name", "my laptop", "--out", dir}, dir + "/d.log");
  EXPECT_TRUE(ExitedWith(bad, 2)) << bad_output;
  EXPECT_NE(bad_output.find("'my laptop' is not a node id"), std::string::npos) << bad_output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/my laptop.key"));
}

TEST(SecureMesh, AllowlistedNodesTrainTogetherAndANodeWithAnUnknownKeyGetsNothing) {
  std::string dir = ::testing::TempDir() + "/e2e_secure_mesh";
  std::filesystem::remove_all(dir);
  std::string keys = dir + "/keys";
  std::vector<std::string> ids = {"alpha", "beta", "gamma", "mallory"};
  std::map<std::string, std::string> key_of;
  for (const std::string& id : ids) {
    auto [status, output] = Keygen({"--name", id, "--out", keys}, dir + "/keygen.log");
    ASSERT_TRUE(ExitedWith(status, 0)) << output;
    key_of[id] = PublicKeyOf(keys, id);
  }
  // The honest nodes' allowlist, built as an operator would: cat alpha.pub beta.pub gamma.pub.
  {
    std::ofstream allowlist(keys + "/allowed_keys");
    for (const char* id : {"alpha", "beta", "gamma"}) {
      allowlist << std::ifstream(keys + "/" + id + ".pub").rdbuf();
    }
  }
  auto shards = WriteSyntheticShards(dir + "/shards", 4, 1, 5);
  ASSERT_EQ(shards.size(), 4u);
  std::vector<std::string> endpoints = {FreeEndpoint("127.0.0.5"), FreeEndpoint("127.0.0.6"),
                                        FreeEndpoint("127.0.0.7"), FreeEndpoint("127.0.0.8")};
  constexpr int kRounds = 12;
  std::vector<ChildProcess> nodes;
  for (size_t i = 0; i < ids.size(); ++i) {
    node::NodeConfig c = SyntheticNodeConfig(ids[i], endpoints[i], shards[i], dir + "/" + ids[i]);
    c.training.rounds = kRounds;
    // Long enough (about 5 s) that the intruder, started last, tries while the others run even
    // on a loaded machine.
    c.round.min_round_s = 0.4;
    c.learning.peers_per_round = 2;
    c.learning.sampler = topology::SamplerKind::kRandom;
    bool intruder = ids[i] == "mallory";
    // Honest nodes know each other; the intruder knows all three and their keys, and trusts them.
    for (size_t j = 0; j < 3; ++j) {
      if (j != i) c.peers.push_back({ids[j], endpoints[j], key_of[ids[j]]});
    }
    node::SecuritySection security;
    security.secret_key_file = keys + "/" + ids[i] + ".key";
    if (intruder) {
      security.allowed_keys = {key_of["alpha"], key_of["beta"], key_of["gamma"]};
    } else {
      security.allowed_keys_file = keys + "/allowed_keys";
    }
    c.security = security;
    std::string config = WriteConfig(dir + "/" + ids[i] + ".toml", c);
    auto child =
        ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", config}, dir + "/" + ids[i] + ".log");
    ASSERT_TRUE(child.has_value());
    nodes.push_back(std::move(*child));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_TRUE(ExitedWith(nodes[i].Wait(seconds(180)), 0))
        << ids[i] << " log:\n"
        << ReadText(dir + "/" + ids[i] + ".log");
  }

  for (const char* id : {"alpha", "beta", "gamma"}) {
    std::string out = dir + "/" + id;
    std::string log = ReadText(dir + "/" + std::string(id) + ".log");
    EXPECT_EQ(LastRound(out), kRounds) << id;
    EXPECT_NE(log.find("traffic is encrypted (CURVE)"), std::string::npos) << log;
    EXPECT_EQ(log.find("unencrypted"), std::string::npos) << log;
    // Models were exchanged over the encrypted connections, and only among the honest three.
    std::set<std::string> others;
    for (const char* other : {"alpha", "beta", "gamma"}) {
      if (std::string(other) != id) others.insert(other);
    }
    EXPECT_EQ(ScoredPeers(out), others) << id;
    int answered = 0;
    for (const auto& [peer, counts] : Comm(out)) {
      EXPECT_TRUE(others.count(peer)) << id << " talked to " << peer;
      answered += counts.second;
    }
    EXPECT_GE(answered, kRounds) << id << " got too few models; log:\n" << log;
    // The intruder never got past the handshake: the node never heard of it, and says so.
    EXPECT_EQ(log.find("mallory"), std::string::npos) << log;
    EXPECT_NE(log.find("whose CURVE key is not on the allowlist"), std::string::npos) << log;
  }

  std::string mallory = dir + "/mallory";
  std::string mallory_log = ReadText(dir + "/mallory.log");
  auto rows = Rounds(mallory);
  ASSERT_EQ(rows.size(), static_cast<size_t>(kRounds + 1)) << mallory_log;
  for (const auto& row : rows) {
    EXPECT_EQ(row.answered, 0) << "round " << row.round;
    EXPECT_EQ(row.bytes_in, 0u) << "round " << row.round << ": the intruder received bytes";
  }
  for (const auto& [peer, counts] : Comm(mallory)) EXPECT_EQ(counts.second, 0) << peer;
  EXPECT_TRUE(ScoredPeers(mallory).empty());
  EXPECT_EQ(mallory_log.find("joined"), std::string::npos) << mallory_log;
  // It says why, in the words of its connections' handshakes (node/transport/link_watch.h).
  EXPECT_NE(mallory_log.find("refused this node's CURVE public key " + key_of["mallory"] +
                             " (ZAP status 400): its allowlist lacks the key"),
            std::string::npos)
      << mallory_log;
}

TEST(SecureMesh, ANodeWithAMissingOrOpenKeyFileRefusesToStartAndNamesTheFile) {
  std::string dir = ::testing::TempDir() + "/e2e_secure_refuse";
  std::filesystem::remove_all(dir);
  auto [status, output] = Keygen({"--name", "peer", "--out", dir}, dir + "/keygen.log");
  ASSERT_TRUE(ExitedWith(status, 0)) << output;
  node::NodeConfig c =
      SyntheticNodeConfig("lonely", "tcp://127.0.0.1:1", dir + "/no.shard", dir + "/out");
  c.peers = {{"peer", "tcp://127.0.0.1:2", PublicKeyOf(dir, "peer")}};
  c.security = node::SecuritySection{dir + "/lonely.key", {PublicKeyOf(dir, "peer")}, ""};
  std::string config = WriteConfig(dir + "/lonely.toml", c);

  for (bool check : {false, true}) {  // starting, and --check, read the key files
    std::vector<std::string> args = {MESHLEARN_NODE_BIN, "--config", config};
    if (check) args.push_back("--check");
    std::string log = dir + "/missing" + (check ? "-check" : "") + ".log";
    auto child = ChildProcess::Start(args, log);
    ASSERT_TRUE(child.has_value());
    EXPECT_TRUE(ExitedWith(child->Wait(seconds(30)), 2)) << ReadText(log);
    EXPECT_NE(ReadText(log).find("secret key file '" + dir + "/lonely.key' does not exist"),
              std::string::npos)
        << ReadText(log);
  }

  std::filesystem::copy_file(dir + "/peer.key", dir + "/lonely.key");
  ::chmod((dir + "/lonely.key").c_str(), 0640);
  auto child = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", config}, dir + "/open.log");
  ASSERT_TRUE(child.has_value());
  EXPECT_TRUE(ExitedWith(child->Wait(seconds(30)), 2));
  EXPECT_NE(ReadText(dir + "/open.log").find(dir + "/lonely.key' is accessible by group or others"),
            std::string::npos)
      << ReadText(dir + "/open.log");
}

}  // namespace
}  // namespace meshlearn::e2e
