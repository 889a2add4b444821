// [security]: the config section, the key files a node reads at start (every error names the
// file), and the key pair files meshlearn-keygen writes.
#include <sys/stat.h>
#include <zmq.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "node/config/config.h"
#include "node/transport/curve_keys.h"

namespace meshlearn::node {
namespace {

// A fresh empty folder for one test.
std::string TestDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/security_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

CurveKeyPair NewKeyPair() {
  auto pair = GenerateCurveKeyPair();
  EXPECT_TRUE(pair.ok()) << pair.status().ToString();
  return pair.ok() ? *pair : CurveKeyPair{};
}

// Writes `text` to `path` with `mode`.
void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

mode_t ModeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

// A node config with [security] whose peer "node-2" has `peer_key`.
std::string SecureConfig(const std::string& secret_key_file, const std::string& allowed,
                         const std::string& peer_key) {
  return "id = \"node-1\"\nlisten = \"tcp://127.0.0.2:5555\"\n[data]\nshard = \"s\"\n"
         "[security]\nsecret_key_file = \"" +
         secret_key_file + "\"\n" + allowed +
         "\n[[peers]]\nid = \"node-2\"\naddress = \"tcp://127.0.0.3:5555\"\npublic_key = \"" +
         peer_key + "\"\n";
}

Status ParseError(const std::string& text) {
  auto parsed = ParseNodeConfig(text, "node.toml");
  return parsed.ok() ? Status::Ok() : parsed.status();
}

// ---- the config section ---------------------------------------------------------------------

TEST(SecurityConfig, SectionAndPeerKeysParseAndRenderBackEqual) {
  CurveKeyPair peer = NewKeyPair();
  CurveKeyPair other = NewKeyPair();
  auto c = ParseNodeConfig(
      SecureConfig("keys/node-1.key",
                   "allowed_keys = [\"" + peer.public_key + "\", \"" + other.public_key +
                       "\"]\nallowed_keys_file = \"keys/allowed_keys\"",
                   peer.public_key),
      "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->security.has_value());
  EXPECT_EQ(c->security->secret_key_file, "keys/node-1.key");
  EXPECT_EQ(c->security->allowed_keys,
            (std::vector<std::string>{peer.public_key, other.public_key}));
  EXPECT_EQ(c->security->allowed_keys_file, "keys/allowed_keys");
  ASSERT_EQ(c->peers.size(), 1u);
  EXPECT_EQ(c->peers[0].public_key, peer.public_key);
  auto again = ParseNodeConfig(RenderNodeConfig(*c), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << RenderNodeConfig(*c);
  EXPECT_EQ(again->security, c->security);
  EXPECT_EQ(again->peers, c->peers);
}

TEST(SecurityConfig, WithoutTheSectionThereIsNoSecurityAndPeerKeysAreOptional) {
  auto c = ParseNodeConfig(
      "id = \"a\"\nlisten = \"tcp://127.0.0.2:1\"\n[data]\nshard = \"s\"\n"
      "[[peers]]\nid = \"b\"\naddress = \"tcp://127.0.0.3:1\"\n",
      "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->security.has_value());
  EXPECT_EQ(c->peers[0].public_key, "");
  EXPECT_EQ(RenderNodeConfig(*c).find("security"), std::string::npos);
}

TEST(SecurityConfig, MissingPartsAreExplained) {
  CurveKeyPair peer = NewKeyPair();
  std::string allowed = "allowed_keys = [\"" + peer.public_key + "\"]";
  Status no_secret = ParseError(
      "id = \"a\"\nlisten = \"tcp://127.0.0.2:1\"\n[data]\nshard = \"s\"\n[security]\n" + allowed +
      "\n[[peers]]\nid = \"b\"\naddress = \"tcp://127.0.0.3:1\"\npublic_key = \"" +
      peer.public_key + "\"\n");
  EXPECT_NE(no_secret.message().find("missing required key 'security.secret_key_file'"),
            std::string::npos)
      << no_secret.message();
  Status no_allowlist = ParseError(SecureConfig("a.key", "", peer.public_key));
  EXPECT_NE(no_allowlist.message().find("'allowed_keys' and/or 'allowed_keys_file'"),
            std::string::npos)
      << no_allowlist.message();
  std::string no_peer_key = SecureConfig("a.key", allowed, peer.public_key);
  no_peer_key.erase(no_peer_key.find("public_key = "));
  Status s = ParseError(no_peer_key);
  EXPECT_NE(s.message().find("[[peers]] 'node-2' needs 'public_key'"), std::string::npos)
      << s.message();
}

TEST(SecurityConfig, AMalformedKeyInTheConfigNamesTheKeyAndTheValue) {
  CurveKeyPair peer = NewKeyPair();
  Status bad_peer =
      ParseError(SecureConfig("a.key", "allowed_keys = [\"" + peer.public_key + "\"]", "tooshort"));
  EXPECT_EQ(bad_peer.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad_peer.message().find("'peers[0].public_key' = 'tooshort' must be a CURVE public "
                                    "key"),
            std::string::npos)
      << bad_peer.message();
  Status bad_allowed = ParseError(SecureConfig(
      "a.key", "allowed_keys = [\"" + peer.public_key + "\", \"nope\"]", peer.public_key));
  EXPECT_NE(bad_allowed.message().find("'security.allowed_keys' = 'nope'"), std::string::npos)
      << bad_allowed.message();
  Status unknown = ParseError(
      SecureConfig("a.key", "allowed_keys = [\"" + peer.public_key + "\"]\nsecret_key = \"x\"",
                   peer.public_key));
  EXPECT_NE(unknown.message().find("unknown key 'security.secret_key'"), std::string::npos)
      << unknown.message();
}

// ---- the key files a node reads at start ---------------------------------------------------

// A node config with [security] and the key files it names, written under `dir`.
struct SecureNode {
  NodeConfig config;
  CurveKeyPair own;
  CurveKeyPair peer;
  std::string secret_path;
  std::string allowlist_path;
};

SecureNode WriteSecureNode(const std::string& dir) {
  SecureNode n;
  n.own = NewKeyPair();
  n.peer = NewKeyPair();
  EXPECT_TRUE(WriteKeyPairFiles(dir, "node-1", n.own, false).ok());
  n.secret_path = SecretKeyPath(dir, "node-1");
  n.allowlist_path = dir + "/allowed_keys";
  WriteFile(n.allowlist_path,
            "# the mesh\n\n" + n.own.public_key + "  # node-1\n" + n.peer.public_key + "\n", 0644);
  auto config =
      ParseNodeConfig(SecureConfig(n.secret_path,
                                   "allowed_keys = [\"" + n.peer.public_key +
                                       "\"]\nallowed_keys_file = \"" + n.allowlist_path + "\"",
                                   n.peer.public_key),
                      "node.toml");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  if (config.ok()) n.config = *config;
  return n;
}

TEST(NodeKeys, TheSecretKeyFileAndTheAllowlistAreRead) {
  SecureNode n = WriteSecureNode(TestDir("read"));
  auto keys = LoadNodeKeys(n.config);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->secret_key, n.own.secret_key);
  EXPECT_EQ(keys->public_key, n.own.public_key);
  // Inline keys first, then the file's; the repeated key once.
  EXPECT_EQ(keys->allowed_keys, (std::vector<std::string>{n.peer.public_key, n.own.public_key}));
}

// Issue 17, item 6: the allowlist names which node id may use which key. The old format (a key,
// perhaps a '#' comment) still reads: those keys are bound to no id.
TEST(NodeKeys, AllowlistLinesAndPeersBindKeysToNodeIds) {
  std::string dir = TestDir("bind");
  SecureNode n = WriteSecureNode(dir);
  CurveKeyPair third = NewKeyPair();
  CurveKeyPair inline_bound = NewKeyPair();
  WriteFile(n.allowlist_path,
            "# the mesh\n" + n.own.public_key + " node-1  # node-1.key\n" + third.public_key +
                "  # a comment only: any id\n",
            0644);
  n.config.security->allowed_keys = {n.peer.public_key, inline_bound.public_key + " node-9"};
  auto keys = LoadNodeKeys(n.config);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->key_ids,
            (std::map<std::string, std::string>{{n.own.public_key, "node-1"},
                                                {inline_bound.public_key, "node-9"},
                                                {n.peer.public_key, "node-2"}}))  // from [[peers]]
      << "the third key stays unbound";
  EXPECT_EQ(keys->allowed_keys.size(), 4u);

  // One key bound to two ids is refused, naming both.
  WriteFile(n.allowlist_path, n.peer.public_key + " node-3\n", 0644);
  n.config.security->allowed_keys.clear();
  auto twice = LoadNodeKeys(n.config);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("bound to node id 'node-3' and to 'node-2'"),
            std::string::npos)
      << twice.status().ToString();
}

TEST(KeyFiles, APublicKeyFileCarriesTheNodeIdItIsBoundTo) {
  std::string dir = TestDir("bound_pub");
  CurveKeyPair pair = NewKeyPair();
  ASSERT_TRUE(WriteKeyPairFiles(dir, "alpha-key", pair, false, "alpha").ok());
  auto allowed = ReadAllowlistFile(dir + "/alpha-key.pub");
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  EXPECT_EQ(*allowed, (std::vector<AllowedKey>{{pair.public_key, "alpha"}}));
  EXPECT_EQ(WriteKeyPairFiles(dir, "beta", NewKeyPair(), false, "not an id").code(),
            ErrorCode::kInvalidArgument);
}

TEST(NodeKeys, AMissingSecretKeyFileIsNotFoundAndNamesTheFile) {
  SecureNode n = WriteSecureNode(TestDir("missing"));
  std::filesystem::remove(n.secret_path);
  auto keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(keys.status().message().find("secret key file '" + n.secret_path + "' does not exist"),
            std::string::npos)
      << keys.status().ToString();
}

TEST(NodeKeys, AnUnreadableKeyFileIsAnIoErrorNamingTheFile) {
  SecureNode n = WriteSecureNode(TestDir("unreadable"));
  std::filesystem::remove(n.allowlist_path);
  std::filesystem::create_directories(n.allowlist_path);  // a folder cannot be read as a file
  auto keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), ErrorCode::kIoError);
  EXPECT_NE(keys.status().message().find("'" + n.allowlist_path + "'"), std::string::npos)
      << keys.status().ToString();
}

TEST(NodeKeys, AMalformedSecretKeyFileNamesTheFileAndLineButNeverQuotesIt) {
  SecureNode n = WriteSecureNode(TestDir("malformed"));
  std::string almost = n.own.secret_key.substr(0, 39);  // one character short
  WriteFile(n.secret_path, "# comment\n" + almost + "\n");
  auto keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(keys.status().message().find("secret key file '" + n.secret_path + "', line 2"),
            std::string::npos)
      << keys.status().ToString();
  EXPECT_EQ(keys.status().message().find(almost), std::string::npos) << "leaks the secret";

  WriteFile(n.secret_path, n.own.secret_key + "\n" + n.peer.secret_key + "\n");
  keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find("must hold exactly one key (found 2)"), std::string::npos)
      << keys.status().ToString();
}

TEST(NodeKeys, ASecretKeyFileOthersCanReadIsRefused) {
  SecureNode n = WriteSecureNode(TestDir("open"));
  ::chmod(n.secret_path.c_str(), 0644);
  auto keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(keys.status().message().find("'" + n.secret_path +
                                         "' is accessible by group or others (mode 0644)"),
            std::string::npos)
      << keys.status().ToString();
  EXPECT_NE(keys.status().message().find("chmod 600"), std::string::npos);
}

TEST(NodeKeys, AMissingOrMalformedAllowlistFileNamesTheFile) {
  SecureNode n = WriteSecureNode(TestDir("allowlist"));
  WriteFile(n.allowlist_path, n.peer.public_key + "\nnot-a-key\n", 0644);
  auto keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find("[security] allowed_keys_file: public key file '" +
                                         n.allowlist_path + "', line 2"),
            std::string::npos)
      << keys.status().ToString();
  // After the key only a node id (binding the key to it) and a '#' comment may follow.
  WriteFile(n.allowlist_path, n.peer.public_key + " node 2\n", 0644);
  EXPECT_EQ(LoadNodeKeys(n.config).status().code(), ErrorCode::kInvalidArgument);
  WriteFile(n.allowlist_path, n.peer.public_key + " no/de\n", 0644);
  EXPECT_EQ(LoadNodeKeys(n.config).status().code(), ErrorCode::kInvalidArgument);
  std::filesystem::remove(n.allowlist_path);
  keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(keys.status().message().find(n.allowlist_path), std::string::npos);
}

TEST(NodeKeys, AnEmptyAllowlistOrAPeerOffTheAllowlistIsRefused) {
  SecureNode n = WriteSecureNode(TestDir("empty"));
  n.config.security->allowed_keys.clear();
  WriteFile(n.allowlist_path, "# nobody yet\n", 0644);
  auto keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find("the allowlist is empty"), std::string::npos)
      << keys.status().ToString();

  WriteFile(n.allowlist_path, n.own.public_key + "\n", 0644);  // not the peer's key
  keys = LoadNodeKeys(n.config);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find("[[peers]] 'node-2': its public_key"), std::string::npos)
      << keys.status().ToString();
}

// ---- key pair files (meshlearn-keygen) --------------------------------------------------------

TEST(KeyFiles, AKeyPairIsWrittenWithAPrivateSecretFileAndAMatchingPublicFile) {
  std::string dir = TestDir("keygen");
  CurveKeyPair pair = NewKeyPair();
  ASSERT_TRUE(WriteKeyPairFiles(dir, "alpha", pair, false).ok());
  EXPECT_EQ(ModeOf(dir + "/alpha.key"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/alpha.pub") & 0044, 0044u) << "the public key is for everyone";

  auto read = ReadSecretKeyFile(dir + "/alpha.key");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, pair);
  auto published = ReadPublicKeysFile(dir + "/alpha.pub");
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  ASSERT_EQ(published->size(), 1u);
  // libzmq itself confirms that the public file belongs to the secret file.
  char derived[41] = {};
  ASSERT_EQ(zmq_curve_public(derived, read->secret_key.c_str()), 0);
  EXPECT_EQ(published->front(), std::string(derived));
}

TEST(KeyFiles, ExistingFilesAreKeptUnlessOverwriteAndThenTheSecretIsPrivateAgain) {
  std::string dir = TestDir("overwrite");
  CurveKeyPair first = NewKeyPair();
  CurveKeyPair second = NewKeyPair();
  ASSERT_TRUE(WriteKeyPairFiles(dir, "alpha", first, false).ok());
  Status refused = WriteKeyPairFiles(dir, "alpha", second, false);
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.message().find(dir + "/alpha.key' already exists"), std::string::npos)
      << refused.ToString();
  EXPECT_EQ(ReadSecretKeyFile(dir + "/alpha.key")->secret_key, first.secret_key);

  ::chmod((dir + "/alpha.key").c_str(), 0644);
  ASSERT_TRUE(WriteKeyPairFiles(dir, "alpha", second, true).ok());
  EXPECT_EQ(ModeOf(dir + "/alpha.key"), 0600u);
  EXPECT_EQ(ReadSecretKeyFile(dir + "/alpha.key")->secret_key, second.secret_key);
  EXPECT_EQ(ReadPublicKeysFile(dir + "/alpha.pub")->front(), second.public_key);
}

TEST(KeyFiles, PublicKeyFilesConcatenateIntoAnAllowlist) {
  std::string dir = TestDir("concat");
  CurveKeyPair a = NewKeyPair();
  CurveKeyPair b = NewKeyPair();
  ASSERT_TRUE(WriteKeyPairFiles(dir, "a", a, false).ok());
  ASSERT_TRUE(WriteKeyPairFiles(dir, "b", b, false).ok());
  std::ofstream(dir + "/allowed_keys")
      << std::ifstream(dir + "/a.pub").rdbuf() << std::ifstream(dir + "/b.pub").rdbuf();
  auto keys = ReadPublicKeysFile(dir + "/allowed_keys");
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, (std::vector<std::string>{a.public_key, b.public_key}));
}

TEST(KeyFiles, Z85KeysAreCheckedByLibzmq) {
  CurveKeyPair pair = NewKeyPair();
  EXPECT_TRUE(IsZ85Key(pair.public_key));
  EXPECT_TRUE(IsZ85Key(pair.secret_key));
  EXPECT_FALSE(IsZ85Key(pair.public_key.substr(1)));
  EXPECT_FALSE(IsZ85Key(pair.public_key + "0"));
  EXPECT_FALSE(IsZ85Key(std::string(40, ' ')));
  std::string hashed = pair.public_key;
  hashed[0] = '#';
  EXPECT_FALSE(IsZ85Key(hashed)) << "no key starts with '#'";
  EXPECT_EQ(*CurvePublicKeyOf(pair.secret_key), pair.public_key);
  EXPECT_EQ(CurvePublicKeyOf("x").status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace meshlearn::node
