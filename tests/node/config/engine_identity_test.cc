// Engine identity and node config templates: ranks, sizes, hosts and ports from the variables
// Slurm, Open MPI and Kubernetes set, Slurm's hostlists, hostfiles, placeholders, and templates
// resolved into node configs. No engine runs here: the environment is passed in.
#include <gtest/gtest.h>

#include "node/config/engine_identity.h"
#include "node/config/node_template.h"

namespace meshlearn::node {
namespace {

EngineEnvironment Env(std::map<std::string, std::string> variables, std::string host = "vm") {
  EngineEnvironment env;
  env.variables = std::move(variables);
  env.host_name = std::move(host);
  return env;
}

EngineSettings Settings(EngineKind kind, uint16_t port = 47000) {
  EngineSettings s;
  s.kind = kind;
  s.port = port;
  return s;
}

TEST(SlurmHostlist, ExpandsRangesListsAndPadding) {
  auto hosts = ExpandSlurmHostlist("node[1-3,5]");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts, (std::vector<std::string>{"node1", "node2", "node3", "node5"}));

  hosts = ExpandSlurmHostlist("gpu[08-10],login,rack[1-2]n[01-02]");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts, (std::vector<std::string>{"gpu08", "gpu09", "gpu10", "login", "rack1n01",
                                              "rack1n02", "rack2n01", "rack2n02"}));

  hosts = ExpandSlurmHostlist("c1-[2-3]-x");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts, (std::vector<std::string>{"c1-2-x", "c1-3-x"}));
}

TEST(SlurmHostlist, RefusesMalformedLists) {
  for (const char* bad : {"", "node[1-3", "node1-3]", "node[3-1]", "node[a-b]", "node[]", "a,,b",
                          "node[[1]]", "node[1-]"}) {
    auto hosts = ExpandSlurmHostlist(bad);
    EXPECT_FALSE(hosts.ok()) << "'" << bad << "' was accepted";
    if (!hosts.ok()) {
      EXPECT_NE(hosts.status().message().find(bad), std::string::npos) << bad;
    }
  }
  auto huge = ExpandSlurmHostlist("n[1-2000000]", 1000);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("more than 1000 hosts"), std::string::npos);
}

TEST(Hostfile, FirstHostSkipsCommentsAndBlankLines) {
  auto first = FirstHostOfHostfile("# the lab\n\n   # spare\n  alpha slots=4 max_slots=8\nbeta\n");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, "alpha");
  EXPECT_EQ(*FirstHostOfHostfile("localhost"), "localhost");
  EXPECT_FALSE(FirstHostOfHostfile("# nothing\n\n").ok());
}

TEST(EngineIdentity, SlurmReadsRankSizeAndTheFirstHostOfTheStep) {
  auto id =
      ResolveEngineIdentity(Settings(EngineKind::kAuto), Env({{"SLURM_PROCID", "4"},
                                                              {"SLURM_NTASKS", "9"},
                                                              {"SLURM_JOB_NODELIST", "node[1-3]"},
                                                              {"SLURM_STEP_NODELIST", "node[2-3]"},
                                                              {"SLURMD_NODENAME", "node3"}}));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->kind, EngineKind::kSlurm);
  EXPECT_EQ(id->rank, 4);
  EXPECT_EQ(id->size, 9);
  EXPECT_EQ(id->host, "node3");
  EXPECT_EQ(id->port, 47004);
  EXPECT_EQ(id->rank0_host, "node2");  // the step's list wins over the job's
  EXPECT_EQ(id->rank0_port, 47000);

  id = ResolveEngineIdentity(
      Settings(EngineKind::kSlurm),
      Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "c[07-08]"}},
          "login7"));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->rank0_host, "c07");
  EXPECT_EQ(id->host, "login7");  // no SLURMD_NODENAME: the host name
}

TEST(EngineIdentity, OpenMpiWinsOverTheSlurmAllocationItRunsIn) {
  EngineEnvironment env = Env({{"OMPI_COMM_WORLD_RANK", "2"},
                               {"OMPI_COMM_WORLD_SIZE", "3"},
                               {"SLURM_PROCID", "0"},
                               {"SLURM_NTASKS", "1"},
                               {"SLURM_JOB_NODELIST", "x1"}},
                              "beta");
  env.hostfile_text = "# hosts\nalpha slots=2\nbeta slots=1\n";
  EngineSettings settings = Settings(EngineKind::kAuto, 6000);
  settings.hostfile = "/run/hostfile";
  auto id = ResolveEngineIdentity(settings, env);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->kind, EngineKind::kMpi);
  EXPECT_EQ(id->rank, 2);
  EXPECT_EQ(id->size, 3);
  EXPECT_EQ(id->host, "beta");
  EXPECT_EQ(id->port, 6002);
  EXPECT_EQ(id->rank0_host, "alpha");
  EXPECT_EQ(id->rank0_port, 6000);
}

TEST(EngineIdentity, KubernetesTakesTheOrdinalOfTheHostName) {
  EngineSettings settings = Settings(EngineKind::kAuto, 5555);
  settings.service = "mesh";
  settings.size = 12;
  auto id = ResolveEngineIdentity(
      settings, Env({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, "meshlearn-node-11"));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->kind, EngineKind::kKubernetes);
  EXPECT_EQ(id->rank, 11);
  EXPECT_EQ(id->size, 12);
  EXPECT_EQ(id->host, "meshlearn-node-11.mesh");
  EXPECT_EQ(id->port, 5555);  // every pod has its own address
  EXPECT_EQ(id->rank0_host, "meshlearn-node-0.mesh");
  EXPECT_EQ(id->rank0_port, 5555);
}

TEST(EngineIdentity, EnvReadsMeshlearnVariablesForAnyOtherLauncher) {
  auto id = ResolveEngineIdentity(Settings(EngineKind::kAuto, 7000),
                                  Env({{"MESHLEARN_RANK", "2"},
                                       {"MESHLEARN_SIZE", "3"},
                                       {"MESHLEARN_RANK0_HOST", "10.1.2.3"},
                                       {"MESHLEARN_HOST", "box2"}}));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->kind, EngineKind::kEnv);
  EXPECT_EQ(id->rank, 2);
  EXPECT_EQ(id->size, 3);
  EXPECT_EQ(id->host, "box2");
  EXPECT_EQ(id->port, 7002);
  EXPECT_EQ(id->rank0_host, "10.1.2.3");
  auto missing = ResolveEngineIdentity(Settings(EngineKind::kEnv),
                                       Env({{"MESHLEARN_RANK", "0"}, {"MESHLEARN_SIZE", "3"}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("MESHLEARN_RANK0_HOST is not set"), std::string::npos);
}

// Each case: the engine, its environment, and what the refusal must name.
struct Refusal {
  EngineKind kind;
  std::map<std::string, std::string> variables;
  std::string host;
  std::string named;
};

TEST(EngineIdentity, ARankWithoutUsableIdentityIsRefusedNamingTheVariable) {
  std::vector<Refusal> cases = {
      {EngineKind::kAuto, {}, "vm", "OMPI_COMM_WORLD_RANK"},
      {EngineKind::kAuto, {}, "vm", "SLURM_PROCID"},
      {EngineKind::kAuto, {}, "vm", "MESHLEARN_RANK"},
      {EngineKind::kEnv, {{"MESHLEARN_RANK", "1"}}, "vm", "MESHLEARN_SIZE is not set"},
      {EngineKind::kSlurm, {{"SLURM_NTASKS", "3"}}, "vm", "SLURM_PROCID is not set"},
      {EngineKind::kSlurm,
       {{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "3"}},
       "vm",
       "SLURM_PROCID = 'x'"},
      {EngineKind::kSlurm, {{"SLURM_PROCID", "1"}}, "vm", "SLURM_NTASKS is not set"},
      {EngineKind::kSlurm,
       {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "3"}},
       "vm",
       "SLURM_JOB_NODELIST"},
      {EngineKind::kSlurm,
       {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "3"}, {"SLURM_JOB_NODELIST", "n1"}},
       "vm",
       "outside a mesh of 3"},
      {EngineKind::kSlurm,
       {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "3"}, {"SLURM_JOB_NODELIST", "n[1-"}},
       "vm",
       "SLURM_JOB_NODELIST"},
      {EngineKind::kMpi, {{"OMPI_COMM_WORLD_SIZE", "2"}}, "vm", "OMPI_COMM_WORLD_RANK is not set"},
      {EngineKind::kMpi,
       {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
       "vm",
       "[engine] hostfile"},
      {EngineKind::kKubernetes, {}, "worker", "does not end in -<ordinal>"},
  };
  for (const Refusal& c : cases) {
    auto id = ResolveEngineIdentity(Settings(c.kind), Env(c.variables, c.host));
    ASSERT_FALSE(id.ok()) << c.named;
    EXPECT_EQ(id.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(id.status().message().find(c.named), std::string::npos)
        << id.status().message() << "\n  should name: " << c.named;
  }
}

TEST(EngineIdentity, PortsBeyond65535AreRefused) {
  auto id = ResolveEngineIdentity(
      Settings(EngineKind::kSlurm, 65530),
      Env({{"SLURM_PROCID", "8"}, {"SLURM_NTASKS", "9"}, {"SLURM_JOB_NODELIST", "n1"}}));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("exceeds 65535"), std::string::npos);
}

TEST(Placeholders, FillKnownWordsAndRefuseUnknownOnes) {
  EngineIdentity id;
  id.rank = 3;
  id.size = 9;
  id.host = "node2";
  id.port = 47003;
  auto filled = FillPlaceholders("/run/{size}/node-{rank}@{host}:{port} {not a word} {}", id);
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  EXPECT_EQ(*filled, "/run/9/node-3@node2:47003 {not a word} {}");
  auto unknown = FillPlaceholders("client-{ranks}.shard", id);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("{ranks}"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("{rank}, {size}, {host}, {port}"), std::string::npos);
  EXPECT_TRUE(HasPlaceholder("a{rank}"));
  EXPECT_FALSE(HasPlaceholder("a{b c}"));
}

constexpr const char* kTemplate = R"(
id = "{rank}"
listen = "tcp://0.0.0.0:{port}"
output_dir = "/runs/x/node-{rank}"
[data]
shard = "/runs/x/shards/client-{rank}.shard"
[engine]
kind = "slurm"
port = 41000
)";

EngineEnvironmentSource SlurmRank(int rank) {
  return [rank](const EngineSettings&) -> Result<EngineEnvironment> {
    return Env({{"SLURM_PROCID", std::to_string(rank)},
                {"SLURM_NTASKS", "9"},
                {"SLURM_JOB_NODELIST", "node[1-3]"},
                {"SLURMD_NODENAME", "node" + std::to_string(1 + rank / 3)}});
  };
}

TEST(NodeTemplate, EveryRankGetsItsIdPathsPortAndRankZeroAsPeer) {
  auto loaded = ParseNodeConfigOrTemplate(kTemplate, "t.toml", SlurmRank(5));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const NodeConfig& c = loaded->config;
  EXPECT_EQ(c.id, "5");
  EXPECT_EQ(c.listen, "tcp://0.0.0.0:41005");
  EXPECT_EQ(c.advertise, "tcp://node2:41005");
  EXPECT_EQ(c.output_dir, "/runs/x/node-5");
  EXPECT_EQ(c.data.shard, "/runs/x/shards/client-5.shard");
  EXPECT_EQ(c.mesh_size, 9);
  ASSERT_EQ(c.peers.size(), 1u);
  EXPECT_EQ(c.peers[0], PeerAddress("0", "tcp://node1:41000"));
  ASSERT_TRUE(loaded->engine.has_value());
  EXPECT_EQ(loaded->engine->rank, 5);

  // Rank 0 knows nobody at start: the others greet it.
  auto rank0 = ParseNodeConfigOrTemplate(kTemplate, "t.toml", SlurmRank(0));
  ASSERT_TRUE(rank0.ok()) << rank0.status().ToString();
  EXPECT_TRUE(rank0->config.peers.empty());
  EXPECT_EQ(rank0->config.advertise, "tcp://node1:41000");
}

TEST(NodeTemplate, ASeedListIsSharedByAllRanksAndTheRankItselfIsDropped) {
  std::string text = std::string(kTemplate) +
                     "[[peers]]\nid = \"1\"\naddress = \"tcp://node1:41001\"\n"
                     "[[peers]]\nid = \"0\"\naddress = \"tcp://seed0:41000\"\n";
  auto rank1 = ParseNodeConfigOrTemplate(text, "t.toml", SlurmRank(1));
  ASSERT_TRUE(rank1.ok()) << rank1.status().ToString();
  // Its own entry dropped; rank 0 listed by the seed list once.
  EXPECT_EQ(rank1->config.peers, (std::vector<PeerAddress>{PeerAddress("0", "tcp://seed0:41000")}));
  auto rank7 = ParseNodeConfigOrTemplate(text, "t.toml", SlurmRank(7));
  ASSERT_TRUE(rank7.ok()) << rank7.status().ToString();
  EXPECT_EQ(rank7->config.peers.size(), 2u);
}

TEST(NodeTemplate, RefusalsNameTheFileAndWhatIsWrong) {
  auto no_rank = ParseNodeConfigOrTemplate(
      kTemplate, "t.toml",
      [](const EngineSettings&) -> Result<EngineEnvironment> { return Env({}); });
  ASSERT_FALSE(no_rank.ok());
  EXPECT_NE(no_rank.status().message().find("t.toml"), std::string::npos);
  EXPECT_NE(no_rank.status().message().find("SLURM_PROCID"), std::string::npos);

  std::string host_id = std::string(kTemplate);
  host_id.replace(host_id.find("\"{rank}\""), 8, "\"{host}-{rank}\"");
  auto bad_id = ParseNodeConfigOrTemplate(host_id, "t.toml", SlurmRank(1));
  ASSERT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.status().message().find("{rank} and {size} only"), std::string::npos);

  std::string unknown = std::string(kTemplate);
  unknown.replace(unknown.find("port = 41000"), 12, "port = 41000\nbogus = 2");
  auto bad_key = ParseNodeConfigOrTemplate(unknown, "t.toml", SlurmRank(1));
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.status().message().find("engine.bogus"), std::string::npos);

  std::string typo = std::string(kTemplate);
  typo.replace(typo.find("client-{rank}"), 13, "client-{rnak}");
  auto bad_placeholder = ParseNodeConfigOrTemplate(typo, "t.toml", SlurmRank(1));
  ASSERT_FALSE(bad_placeholder.ok());
  EXPECT_NE(bad_placeholder.status().message().find("t.toml:6: 'data.shard'"), std::string::npos)
      << bad_placeholder.status().message();
  EXPECT_NE(bad_placeholder.status().message().find("{rnak}"), std::string::npos);
}

// The launcher writes an engine's template with RenderNodeTemplate: the [engine] section it writes
// reads back to the same settings, and the config to the one each rank resolves.
TEST(NodeTemplate, ARenderedTemplateReadsBackItsEngineSettingsAndConfig) {
  auto plain = ParseNodeConfigOrTemplate(kTemplate, "t.toml", SlurmRank(5));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  NodeConfig config = plain->config;
  config.id = "{rank}";
  config.listen = "tcp://0.0.0.0:{port}";
  config.output_dir = "/runs/x/node-{rank}";
  config.data.shard = "/runs/x/shards/client-{rank}.shard";
  config.advertise.clear();
  config.mesh_size = 0;
  config.peers.clear();
  for (const EngineSettings& engine :
       {EngineSettings{EngineKind::kSlurm, 41000, "", "", 0},
        EngineSettings{EngineKind::kMpi, 42000, "/runs/x/method/host \"file\"", "", 0},
        EngineSettings{EngineKind::kKubernetes, 43000, "", "mesh", 4}}) {
    const std::string text = RenderNodeTemplate(config, engine);
    std::optional<EngineSettings> read;
    auto loaded = ParseNodeConfigOrTemplate(text, "t.toml", [&](const EngineSettings& settings) {
      read = settings;
      return SlurmRank(5)(settings);
    });
    ASSERT_TRUE(read.has_value()) << text;
    EXPECT_EQ(*read, engine) << text;
    if (engine.kind != EngineKind::kSlurm) continue;  // the others read another environment
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString() << "\n" << text;
    EXPECT_EQ(loaded->config, plain->config) << text;
  }
}

TEST(NodeTemplate, APlainConfigWithAPlaceholderIsRefused) {
  const char* text =
      "id = \"{rank}\"\nlisten = \"tcp://127.0.0.1:1\"\n[data]\nshard = \"s\"\n"
      "[[peers]]\nid = \"b\"\naddress = \"tcp://127.0.0.1:2\"\n";
  bool asked = false;
  auto loaded = ParseNodeConfigOrTemplate(text, "n.toml", [&](const EngineSettings&) {
    asked = true;
    return Result<EngineEnvironment>(EngineEnvironment{});
  });
  ASSERT_FALSE(loaded.ok());
  EXPECT_FALSE(asked);
  EXPECT_NE(loaded.status().message().find("n.toml:1: 'id'"), std::string::npos)
      << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("no [engine] section"), std::string::npos);
}

// A Z85 public key may hold "{1}" (the launcher's security e2e test once drew one): it is data,
// in a plain config and in a template alike.
TEST(NodeTemplate, APublicKeyWithBracesIsNotAPlaceholder) {
  const std::string key = "MP&Pp{YAMww{1}1(%%&UZQ+GBeqMpJCeynbRVBgH";
  const std::string peer =
      "[[peers]]\nid = \"b\"\naddress = \"tcp://127.0.0.1:2\"\npublic_key = \"" + key + "\"\n";
  std::string plain = "id = \"a\"\nlisten = \"tcp://127.0.0.1:1\"\n[data]\nshard = \"s\"\n" + peer;
  auto loaded = ParseNodeConfigOrTemplate(plain, "n.toml", [](const EngineSettings&) {
    return Result<EngineEnvironment>(EngineEnvironment{});
  });
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->config.peers.size(), 1u);
  EXPECT_EQ(loaded->config.peers[0].public_key, key);

  auto rank = ParseNodeConfigOrTemplate(std::string(kTemplate) + peer, "t.toml", SlurmRank(4));
  ASSERT_TRUE(rank.ok()) << rank.status().ToString();
  bool found = false;
  for (const PeerAddress& p : rank->config.peers) found |= p.id == "b" && p.public_key == key;
  EXPECT_TRUE(found) << "the template's seed peer keeps its key as written";
}

// The keys of [security] allowed_keys are data too: the launcher's security e2e test drew
// "...A4t{7}OPZ..." for a node, and the node with that key on its allowlist refused its config.
// A template's allowed_keys_file is a path and still takes placeholders.
TEST(NodeTemplate, AllowedKeysWithBracesAreNotPlaceholders) {
  const std::string key = "5ZVT^*64EWGN(v8WcGu<A4t{7}OPZ@r}Q{hn3$xg";
  const std::string security = "[security]\nsecret_key_file = \"n.key\"\nallowed_keys = [\"" + key +
                               "\", \"" + key + " b\"]\n";
  std::string plain =
      "id = \"a\"\nlisten = \"tcp://127.0.0.1:1\"\nmesh_size = 2\n[data]\nshard = \"s\"\n" +
      security;
  auto loaded = ParseNodeConfigOrTemplate(plain, "n.toml", [](const EngineSettings&) {
    return Result<EngineEnvironment>(EngineEnvironment{});
  });
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->config.security.has_value());
  EXPECT_EQ(loaded->config.security->allowed_keys, (std::vector<std::string>{key, key + " b"}));

  // Rank 0 is a seed peer with its key, as every peer of a secure mesh.
  const std::string rank0 =
      "[[peers]]\nid = \"0\"\naddress = \"tcp://h0:41000\"\npublic_key = \"" + key + "\"\n";
  auto rank = ParseNodeConfigOrTemplate(std::string(kTemplate) + rank0 + security +
                                            "allowed_keys_file = \"/keys/rank-{rank}.allow\"\n",
                                        "t.toml", SlurmRank(4));
  ASSERT_TRUE(rank.ok()) << rank.status().ToString();
  ASSERT_TRUE(rank->config.security.has_value());
  EXPECT_EQ(rank->config.security->allowed_keys, (std::vector<std::string>{key, key + " b"}));
  EXPECT_EQ(rank->config.security->allowed_keys_file, "/keys/rank-4.allow");
}

}  // namespace
}  // namespace meshlearn::node
