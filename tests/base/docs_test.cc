// The repository's documents: every reference a user can follow resolves inside the repository
// (a user of the repository has nothing beside it).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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
