// tools/ holds node keys as values (issue 56): no string literal in its sources spells a node key,
// whether as a dotted path ("learning.tau", "node.learning.tau") or as a bare key name; the keys
// are named only by the node's own key descriptions (NodeConfig::Describe), which tools/ reaches
// through tools/scenario/node_keys.h. Reads the source tree.

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tools/scenario/node_keys.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

// Bare words that are node key names and also name something of the tools' own, each for the
// reason given; a literal of one of them is not a node key.
const std::map<std::string, std::string> kToolsOwnWords = {
    {"allowed_keys", "run_layout.h: the mesh's allowlist file"},
    {"clusters", "a CSV column and the dashboard's JSON field"},
    {"codec", "a CSV column of bytes_to_target and of the benches"},
    {"data", "the scenario's [data] section"},
    {"emd", "the dashboard's JSON field and the bench's name"},
    {"epsilon", "a summary.csv column (the privacy spent)"},
    {"http_port", "the dashboard's JSON field of a node's status"},
    {"id", "a JSON field and a fuzz report key"},
    {"kind", "the [network] outage key"},
    {"max_samples", "a bench's option"},
    {"metric", "the dashboard's JSON field"},
    {"peers", "a JSON field and a bench's option"},
    {"round", "a CSV column"},
    {"rounds", "the manifest's and the dashboard's field"},
    {"security", "the scenario's top-level key"},
    {"seed", "the scenario's and the manifest's top-level key"},
    {"target", "a bench's option"},
    {"threads", "a column of the report's tables"},
};

// The string literals of C++ source `text`, comments left out (a literal's text as written).
std::vector<std::string> Literals(const std::string& text) {
  std::vector<std::string> literals;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "//") == 0) {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
    } else if (text.compare(i, 2, "/*") == 0) {
      i = text.find("*/", i);
      if (i == std::string::npos) break;
    } else if (text[i] == '\'') {
      for (++i; i < text.size() && text[i] != '\''; ++i) i += text[i] == '\\';
    } else if (text[i] == '"' && (i == 0 || text[i - 1] != 'R')) {
      std::string literal;
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i) {
        if (text[i] == '\\') literal += text[i++];
        literal += text[i];
      }
      literals.push_back(literal);
    }
  }
  return literals;
}

// The node key `literal` spells, or "": a dotted key, the same under the scenario's [node], or
// the bare name of a key (`bare`, with the key it names) that is not one of the tools' own words.
std::string NodeKeyIn(const std::string& literal, const std::set<std::string>& dotted,
                      const std::map<std::string, std::string>& bare) {
  if (dotted.count(literal)) return literal;
  if (literal.rfind("node.", 0) == 0 && dotted.count(literal.substr(5))) return literal.substr(5);
  if (auto it = bare.find(literal); it != bare.end() && !kToolsOwnWords.count(literal)) {
    return it->second;
  }
  return "";
}

// Every literal of a node key in the sources under `root`/tools, as "<file>: \"<literal>\"
// (<key>)".
std::vector<std::string> NodeKeyLiterals(const fs::path& root) {
  std::set<std::string> dotted;
  std::map<std::string, std::string> bare;
  for (const std::string& key : NodeKeyNames()) {
    if (key.find('.') != std::string::npos) dotted.insert(key);
    bare.emplace(key.substr(key.rfind('.') + 1), key);
  }
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(root / "tools")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cc") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    for (const std::string& literal : Literals(text.str())) {
      if (std::string key = NodeKeyIn(literal, dotted, bare); !key.empty()) {
        found.push_back(fs::relative(entry.path(), root).generic_string() + ": \"" + literal +
                        "\" (" + key + ")");
      }
    }
  }
  return found;
}

std::string Lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "\n  " + line;
  return out;
}

TEST(NodeKeyLiterals, TheNodesKeysAreKnownByTheirDescriptions) {
  const std::vector<std::string> keys = NodeKeyNames();
  const std::set<std::string> names(keys.begin(), keys.end());
  for (const char* key : {"id", "seed", "learning.tau", "learning.sampler", "training.rounds",
                          "round.resting", "privacy.noise_multiplier", "security.allowed_keys"}) {
    EXPECT_TRUE(names.count(key)) << key;
  }
  const node::NodeConfig c;
  EXPECT_EQ(NodeKeyName(c, c.learning.tau), "learning.tau");
  EXPECT_EQ(NodeKeyName(c, c.learning.metric), "learning.metric");  // a section's first key
  EXPECT_EQ(NodeKeyName(c, c.learning), "learning");
  EXPECT_EQ(NodeKeyName(c, c.learning.robust.clip_tau), "learning.clip_tau");
}

TEST(NodeKeyLiterals, ToolsSpellsNoNodeKey) {
  EXPECT_EQ(Lines(NodeKeyLiterals(MESHLEARN_SOURCE_DIR)), "");
}

// The check finds each form of a node key literal, and passes over comments and the tools' own
// words.
TEST(NodeKeyLiterals, EachFormOfANodeKeyIsFound) {
  const fs::path root = fs::path(::testing::TempDir()) / "node_key_literals";
  fs::remove_all(root);
  fs::create_directories(root / "tools");
  std::ofstream(root / "tools" / "a.cc")
      << "// \"learning.tau\" in a comment\n"
         "const char* a = \"node.learning.two_hop\";\n"
         "toml::table t{{\"sampler\", s.sampler}, {\"round\", 1}};\n"
         "bool b = key == \"training.rounds\"; /* \"learning.metric\" */ char c = '\"';\n";
  EXPECT_EQ(Lines(NodeKeyLiterals(root)),
            Lines({"tools/a.cc: \"node.learning.two_hop\" (learning.two_hop)",
                   "tools/a.cc: \"sampler\" (learning.sampler)",
                   "tools/a.cc: \"training.rounds\" (training.rounds)"}));
}

}  // namespace
}  // namespace meshlearn::launch
