// tools/'s include graph and its libraries' link lists keep the layering rules
// (tests/tools/include_graph.h): over this source tree, and over small trees that break each rule
// once, so that the checks are seen to catch what they are for.

#include "tests/tools/include_graph.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fresh_dir.h"

namespace meshlearn::testing {
namespace {

namespace fs = std::filesystem;

std::string Lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "\n  " + line;
  return out;
}

TEST(ToolsIncludeGraph, TheTreeIsReadWithEveryToolsLibraryInOrder) {
  const IncludeGraph graph(MESHLEARN_SOURCE_DIR);
  const std::vector<std::string> expected = {
      "meshlearn_cli",    "meshlearn_run_layout", "meshlearn_plot",   "meshlearn_scenario",
      "meshlearn_report", "meshlearn_dashboard",  "meshlearn_launch", "meshlearn_fuzz"};
  EXPECT_EQ(graph.ToolsLibraries(), expected);
  const Target* launch = graph.Find("meshlearn_launch");
  ASSERT_NE(launch, nullptr);
  EXPECT_TRUE(launch->public_links.count("meshlearn_scenario"));
  EXPECT_TRUE(launch->private_links.count("meshlearn_report"));
  EXPECT_NE(std::find(launch->sources.begin(), launch->sources.end(), "tools/launch/run.cc"),
            launch->sources.end());
}

TEST(ToolsIncludeGraph, HasNoIncludeLoop) {
  EXPECT_EQ(Lines(IncludeGraph(MESHLEARN_SOURCE_DIR).Loops()), "");
}

TEST(ToolsIncludeGraph, EveryIncludeIsOfALibraryItsTargetLinks) {
  EXPECT_EQ(Lines(IncludeGraph(MESHLEARN_SOURCE_DIR).UnlinkedIncludes()), "");
}

TEST(ToolsIncludeGraph, EachLibraryLinksOnlyTheOnesBelowIt) {
  EXPECT_EQ(Lines(IncludeGraph(MESHLEARN_SOURCE_DIR).LinksUp()), "");
}

// A small tree: node/host/ (meshlearn_node), and tools/ with `low` below `high`.
class BrokenTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = FreshTestDir("include_graph");
    Write("node/host/CMakeLists.txt", "add_library(meshlearn_node STATIC node.cc)\n");
    Write("node/host/node.h", "#pragma once\n");
    Write("node/host/node.cc", "#include \"node/host/node.h\"\n");
    Write("tools/CMakeLists.txt", "add_subdirectory(low)\nadd_subdirectory(high)\n");
    Write("tools/low/CMakeLists.txt",
          "add_library(low STATIC low.cc)  # the bottom\n"
          "target_link_libraries(low PUBLIC meshlearn_base)\n");
    Write("tools/low/low.h", "#pragma once\n");
    Write("tools/low/low.cc", "#include \"tools/low/low.h\"\n");
    Write("tools/high/CMakeLists.txt",
          "add_library(high STATIC high.cc)\n"
          "target_link_libraries(high\n  PUBLIC low\n  PRIVATE meshlearn_node)\n");
    Write("tools/high/high.h", "#pragma once\n#include \"tools/low/low.h\"\n");
    Write("tools/high/high.cc", "#include \"tools/high/high.h\"\n#include \"node/host/node.h\"\n");
  }

  void Write(const std::string& file, const std::string& text) {
    fs::create_directories((fs::path(root_) / file).parent_path());
    std::ofstream(fs::path(root_) / file) << text;
  }

  std::string root_;
};

TEST_F(BrokenTree, AsWrittenItKeepsEveryRule) {
  const IncludeGraph graph(root_);
  EXPECT_EQ(graph.ToolsLibraries(), (std::vector<std::string>{"low", "high"}));
  EXPECT_EQ(Lines(graph.Loops()), "");
  EXPECT_EQ(Lines(graph.UnlinkedIncludes()), "");
  EXPECT_EQ(Lines(graph.LinksUp()), "");
}

TEST_F(BrokenTree, AnIncludeBackUpIsALoopAndAnUnlinkedInclude) {
  Write("tools/low/low.cc", "#include \"tools/low/low.h\"\n#include \"tools/high/high.h\"\n");
  const IncludeGraph graph(root_);
  EXPECT_EQ(Lines(graph.Loops()), Lines({"tools/high/high -> tools/low/low -> tools/high/high"}));
  EXPECT_EQ(Lines(graph.UnlinkedIncludes()),
            Lines({"tools/low/low.cc includes tools/high/high.h (high), which low does not link"}));
}

TEST_F(BrokenTree, AHeaderMayIncludeOnlyWhatItsLibraryLinksPublicly) {
  Write("tools/high/high.h", "#pragma once\n#include \"node/host/node.h\"\n");
  EXPECT_EQ(Lines(IncludeGraph(root_).UnlinkedIncludes()),
            Lines({"tools/high/high.h includes node/host/node.h (meshlearn_node), which high does "
                   "not link publicly"}));
}

TEST_F(BrokenTree, AnIncludeOfALibraryNotLinkedIsNamed) {
  Write("tools/low/low.cc", "#include \"tools/low/low.h\"\n#include \"node/host/node.h\"\n");
  EXPECT_EQ(
      Lines(IncludeGraph(root_).UnlinkedIncludes()),
      Lines({"tools/low/low.cc includes node/host/node.h (meshlearn_node), which low does not "
             "link"}));
}

TEST_F(BrokenTree, ALinkToALibraryAboveIsAnArrowBackUp) {
  Write("tools/low/CMakeLists.txt",
        "add_library(low STATIC low.cc)\ntarget_link_libraries(low PRIVATE high)\n");
  EXPECT_EQ(Lines(IncludeGraph(root_).LinksUp()), Lines({"low links high"}));
}

}  // namespace
}  // namespace meshlearn::testing
