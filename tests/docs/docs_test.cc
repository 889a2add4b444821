// The repository's documents: every reference a user can follow resolves inside the repository
// (a user of the repository has nothing beside it), and every link to a section ("#anchor", alone
// or after a file) names a heading of that document.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace meshlearn {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = MESHLEARN_SOURCE_DIR;

// Every Markdown file of the repository (build folders, data and dependencies left out).
std::vector<fs::path> MarkdownFiles() {
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator();
       ++it) {
    std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name == "data" || name == "runs" ||
                               name == ".git" || name == "node_modules")) {
      it.disable_recursion_pending();
    } else if (it->is_regular_file() && it->path().extension() == ".md") {
      files.push_back(it->path());
    }
  }
  return files;
}

std::string Text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// True when `target` names something inside the repository, relative to the document's folder
// or to the repository root.
bool ResolvesInside(const fs::path& document, const std::string& target) {
  for (const fs::path& base : {document.parent_path(), kRoot}) {
    std::error_code ec;
    fs::path resolved = fs::weakly_canonical(base / target, ec);
    std::string inside = fs::weakly_canonical(kRoot).string();
    if (!ec && fs::exists(resolved) && resolved.string().rfind(inside, 0) == 0) return true;
  }
  return false;
}

// The anchor GitHub gives a heading's text: lower case, spaces become '-', and every character
// but letters, digits, '-' and '_' is dropped ("`--out DIR`: the run" -> "--out-dir-the-run").
// Non-ASCII characters are dropped too, so a link to a heading with non-ASCII letters fails here
// rather than passing unchecked.
std::string Anchor(const std::string& heading) {
  std::string anchor;
  for (unsigned char c : heading) {
    if (c == ' ') {
      anchor += '-';
    } else if (c < 0x80 && (std::isalnum(c) || c == '-' || c == '_')) {
      anchor += static_cast<char>(std::tolower(c));
    }
  }
  return anchor;
}

// The anchors of a Markdown document's headings (outside code blocks); a repeated heading gets
// "-1", "-2", ... as on GitHub.
std::set<std::string> Anchors(const std::string& text) {
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  std::istringstream lines(text);
  bool in_code = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    if (in_code || line.empty() || line[0] != '#') continue;
    size_t text_start = line.find_first_not_of('#');
    if (text_start == std::string::npos || line[text_start] != ' ') continue;
    std::string anchor = Anchor(line.substr(text_start + 1));
    int count = seen[anchor]++;
    anchors.insert(count == 0 ? anchor : anchor + "-" + std::to_string(count));
  }
  return anchors;
}

TEST(Docs, AnchorsAreGitHubs) {
  EXPECT_EQ(Anchor("`meshlearn-launch`: N nodes from one command"),
            "meshlearn-launch-n-nodes-from-one-command");
  EXPECT_EQ(Anchor("`[engine]`: one template for every rank an engine starts"),
            "engine-one-template-for-every-rank-an-engine-starts");
  EXPECT_EQ(Anchor("File 004's input pipeline (`pixel_range = \"symmetric\"`)"),
            "file-004s-input-pipeline-pixel_range--symmetric");
  std::set<std::string> anchors = Anchors("# A\n```sh\n# not a heading\n```\n## A\n#tag\n");
  EXPECT_EQ(anchors, (std::set<std::string>{"a", "a-1"}));
}

TEST(Docs, EveryLinkAndDocumentNamedResolvesInsideTheRepository) {
  std::vector<fs::path> files = MarkdownFiles();
  ASSERT_GE(files.size(), 5u) << "found too few documents under " << kRoot;
  const std::regex link(R"(\]\(([^)\s]+)\))");                             // [text](target)
  const std::regex document(R"(([A-Za-z0-9_./-]*[A-Za-z0-9_-]+\.md)\b)");  // any *.md named
  for (const fs::path& file : files) {
    std::string text = Text(file);
    std::string name = fs::relative(file, kRoot).string();
    std::set<std::string> targets;
    for (std::sregex_iterator m(text.begin(), text.end(), link), end; m != end; ++m) {
      std::string target = (*m)[1].str();
      if (target.rfind("http", 0) == 0 || target.rfind("mailto:", 0) == 0 || target[0] == '#') {
        continue;
      }
      targets.insert(target.substr(0, target.find('#')));
    }
    for (std::sregex_iterator m(text.begin(), text.end(), document), end; m != end; ++m) {
      targets.insert((*m)[1].str());
    }
    for (const std::string& target : targets) {
      EXPECT_TRUE(ResolvesInside(file, target))
          << name << " refers to '" << target << "', which is not in the repository";
    }
  }
}

TEST(Docs, EveryLinkToASectionNamesAHeadingOfItsDocument) {
  const std::regex link(R"(\]\(([^)\s]*)#([^)\s]+)\))");  // [text](file#anchor), [text](#anchor)
  int checked = 0;
  for (const fs::path& file : MarkdownFiles()) {
    std::string text = Text(file);
    std::string name = fs::relative(file, kRoot).string();
    for (std::sregex_iterator m(text.begin(), text.end(), link), end; m != end; ++m) {
      std::string target = (*m)[1].str();
      std::string anchor = (*m)[2].str();
      if (target.rfind("http", 0) == 0) continue;
      fs::path document = target.empty() ? file : file.parent_path() / target;
      if (!fs::is_regular_file(document)) continue;  // a missing file fails the test above
      ++checked;
      EXPECT_TRUE(Anchors(Text(document)).count(anchor))
          << name << " links to '" << target << "#" << anchor << "', but "
          << fs::relative(document, kRoot).string() << " has no heading with that anchor";
    }
  }
  EXPECT_GE(checked, 10) << "found too few links to sections; is the link pattern still right?";
}

TEST(Docs, NoDocumentPointsOutsideTheRepository) {
  // The project's private folders and the copies of the papers are not part of the repository:
  // papers are cited by title (docs/DESIGN.md), never by a path.
  const std::regex outside(R"((\.\./shared|/work/|papers/|\b\d{3}_[0-9a-f]{16}\.txt))");
  for (const fs::path& file : MarkdownFiles()) {
    std::string text = Text(file);
    std::smatch m;
    EXPECT_FALSE(std::regex_search(text, m, outside))
        << fs::relative(file, kRoot).string() << " points outside the repository: '" << m.str()
        << "'";
  }
}

}  // namespace
}  // namespace meshlearn
