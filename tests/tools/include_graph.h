#pragma once
// The include graph and the link lists of tools/'s libraries, read from a source tree (its
// CMakeLists.txt files and the quoted #includes of its sources), and the rules they must keep
// (docs/DESIGN.md "Layout and dependency rules"):
// - no include loop: the files of tools/, each .h with its .cc as one unit, include each other
//   without a cycle;
// - every include is of a library linked: a file of a tools library or program includes a header
//   of another library only when that library is among what its target links (directly, or
//   through their PUBLIC links); a header of a tools library only through its PUBLIC links, which
//   are all that the libraries above it get. A header's library is, in tools/, that of its folder;
//   elsewhere the one whose sources hold the .cc of the same name (a header without one, such as
//   node/host/node_files.h, links nothing);
// - no arrow back up: a tools library links only tools libraries added before it in
//   tools/CMakeLists.txt, which lists them from the bottom up.
// Test support, read as text: a CMake command is found by its name and its parentheses, and `if`,
// variables and generator expressions are not evaluated (an argument that is not a target's name
// is not a link).

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace meshlearn::testing {

// One CMake target: a library or a program.
struct Target {
  std::string name;
  std::string folder;                // its CMakeLists.txt's folder, from the tree's root
  std::vector<std::string> sources;  // from the root
  std::set<std::string> public_links, private_links;  // INTERFACE links count as public
};

// The targets of a tree and the include arrows of its tools/.
class IncludeGraph {
 public:
  // Reads the CMakeLists.txt files under `root`'s module folders and every source of tools/.
  explicit IncludeGraph(const std::string& root) : root_(root) {
    for (const char* module : {"base", "protocol", "topology", "similarity", "training", "process",
                               "node", "sim", "tools"}) {
      const std::filesystem::path dir = root_ / module;
      if (!std::filesystem::exists(dir)) continue;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
        if (entry.path().filename() == "CMakeLists.txt") ReadCMake(entry.path());
      }
    }
    for (const Target& t : targets_) {
      for (const std::string& source : t.sources) owner_[source] = t.name;
    }
  }

  // The tools libraries in the order tools/CMakeLists.txt adds their folders.
  std::vector<std::string> ToolsLibraries() const {
    std::vector<std::string> names;
    for (const std::string& folder : tools_folders_) {
      for (const Target& t : targets_) {
        if (t.folder == folder) names.push_back(t.name);
      }
    }
    return names;
  }

  const Target* Find(const std::string& name) const {
    for (const Target& t : targets_) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }

  // Every include loop among the units of tools/, each as "a -> b -> ... -> a".
  std::vector<std::string> Loops() const {
    std::map<std::string, std::set<std::string>> arrows;
    for (const std::string& file : ToolsFiles()) {
      for (const std::string& header : Includes(file)) {
        if (header.rfind("tools/", 0) == 0 && Unit(header) != Unit(file)) {
          arrows[Unit(file)].insert(Unit(header));
        }
      }
    }
    std::vector<std::string> loops;
    std::map<std::string, int> state;  // 1: on the path, 2: done
    std::vector<std::string> path;
    std::function<void(const std::string&)> visit = [&](const std::string& unit) {
      state[unit] = 1;
      path.push_back(unit);
      for (const std::string& next : arrows[unit]) {
        if (state[next] == 1) {
          std::string loop;
          for (auto it = std::find(path.begin(), path.end(), next); it != path.end(); ++it) {
            loop += *it + " -> ";
          }
          loops.push_back(loop + next);
        } else if (state[next] == 0) {
          visit(next);
        }
      }
      path.pop_back();
      state[unit] = 2;
    };
    for (const auto& [unit, next] : arrows) {
      if (state[unit] == 0) visit(unit);
    }
    return loops;
  }

  // Every include in tools/ of a header whose library its file's target does not link (see the
  // rules above), each as "<file> includes <header> (<library>), which <target> does not link
  // (publicly)".
  std::vector<std::string> UnlinkedIncludes() const {
    std::vector<std::string> wrong;
    for (const std::string& file : ToolsFiles()) {
      const std::string target = TargetOf(file);
      if (target.empty()) continue;  // not built (bench/ is left out)
      const bool header = file.ends_with(".h");
      const std::set<std::string> reach = Reachable(target, /*public_only=*/header);
      for (const std::string& included : Includes(file)) {
        const std::string library = TargetOf(included);
        if (library.empty() || library == target || reach.count(library)) continue;
        wrong.push_back(file + " includes " + included + " (" + library + "), which " + target +
                        " does not link" + (header ? " publicly" : ""));
      }
    }
    return wrong;
  }

  // Every link of a tools library to a tools library added after it, as "a links b".
  std::vector<std::string> LinksUp() const {
    const std::vector<std::string> order = ToolsLibraries();
    std::vector<std::string> up;
    for (size_t i = 0; i < order.size(); ++i) {
      const Target* t = Find(order[i]);
      std::set<std::string> links = t->public_links;
      links.insert(t->private_links.begin(), t->private_links.end());
      for (const std::string& link : links) {
        auto at = std::find(order.begin(), order.end(), link);
        if (at != order.end() && static_cast<size_t>(at - order.begin()) >= i) {
          up.push_back(order[i] + " links " + link);
        }
      }
    }
    return up;
  }

 private:
  // The CMake commands `name(...)` of `text`, each as its arguments.
  static std::vector<std::vector<std::string>> Commands(const std::string& text,
                                                        const std::string& name) {
    std::vector<std::vector<std::string>> commands;
    for (size_t at = text.find(name + "("); at != std::string::npos;
         at = text.find(name + "(", at + 1)) {
      if (at > 0 &&
          (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) {
        continue;
      }
      const size_t open = at + name.size();
      int depth = 0;
      size_t close = open;
      for (; close < text.size(); ++close) {
        if (text[close] == '(') ++depth;
        if (text[close] == ')' && --depth == 0) break;
      }
      std::istringstream words(text.substr(open + 1, close - open - 1));
      std::vector<std::string> args;
      for (std::string word; words >> word;) args.push_back(word);
      commands.push_back(args);
    }
    return commands;
  }

  void ReadCMake(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::string text, line;
    while (std::getline(in, line)) text += line.substr(0, line.find('#')) + "\n";
    const std::string folder =
        std::filesystem::relative(path.parent_path(), root_).generic_string();
    if (folder == "tools/bench") return;  // its links are a loop over optional targets
    if (folder == "tools") {
      for (const auto& args : Commands(text, "add_subdirectory")) {
        if (!args.empty()) tools_folders_.push_back("tools/" + args[0]);
      }
    }
    for (const char* command : {"add_library", "add_executable"}) {
      for (const auto& args : Commands(text, command)) {
        if (args.empty()) continue;
        Target t{args[0], folder, {}, {}, {}};
        for (size_t i = 1; i < args.size(); ++i) {
          if (args[i].ends_with(".cc") && args[i].find('$') == std::string::npos) {
            t.sources.push_back(folder + "/" + args[i]);
          }
        }
        targets_.push_back(t);
      }
    }
    for (const auto& args : Commands(text, "target_link_libraries")) {
      if (args.empty()) continue;
      auto t = std::find_if(targets_.begin(), targets_.end(),
                            [&](const Target& x) { return x.name == args[0]; });
      if (t == targets_.end()) continue;
      bool is_public = true;
      for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "PUBLIC" || args[i] == "INTERFACE") {
          is_public = true;
        } else if (args[i] == "PRIVATE") {
          is_public = false;
        } else {
          (is_public ? t->public_links : t->private_links).insert(args[i]);
        }
      }
    }
  }

  // The sources of tools/ (bench/ included), from the root.
  std::vector<std::string> ToolsFiles() const {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root_ / "tools")) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".h" || ext == ".cc") {
        files.push_back(std::filesystem::relative(entry.path(), root_).generic_string());
      }
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  // The quoted includes of `file`.
  std::vector<std::string> Includes(const std::string& file) const {
    std::ifstream in(root_ / file);
    std::vector<std::string> headers;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("#include \"", 0) != 0) continue;
      const size_t end = line.find('"', 10);
      if (end != std::string::npos) headers.push_back(line.substr(10, end - 10));
    }
    return headers;
  }

  // "tools/report/report" for tools/report/report.h and .cc.
  static std::string Unit(const std::string& file) { return file.substr(0, file.rfind('.')); }

  // The target whose file `file` is ("" for none): in tools/, its folder's library (or the
  // program it is the source of); elsewhere the target of the .cc of its name.
  std::string TargetOf(const std::string& file) const {
    const std::string source = Unit(file) + ".cc";
    if (auto own = owner_.find(source); own != owner_.end()) return own->second;
    if (file.rfind("tools/", 0) != 0) return "";
    const std::string folder = std::filesystem::path(file).parent_path().generic_string();
    for (const Target& t : targets_) {
      if (t.folder == folder && folder != "tools") return t.name;
    }
    return "";
  }

  // The targets whose headers `target`'s files may include: what it links, and what those link
  // publicly, all the way down; with `public_only`, from its public links only.
  std::set<std::string> Reachable(const std::string& target, bool public_only) const {
    std::set<std::string> seen;
    std::vector<std::string> todo;
    if (const Target* t = Find(target)) {
      todo.assign(t->public_links.begin(), t->public_links.end());
      if (!public_only) todo.insert(todo.end(), t->private_links.begin(), t->private_links.end());
    }
    while (!todo.empty()) {
      const std::string next = todo.back();
      todo.pop_back();
      if (!seen.insert(next).second) continue;
      if (const Target* t = Find(next)) {
        todo.insert(todo.end(), t->public_links.begin(), t->public_links.end());
      }
    }
    return seen;
  }

  std::filesystem::path root_;
  std::vector<Target> targets_;
  std::map<std::string, std::string> owner_;  // source -> target
  std::vector<std::string> tools_folders_;    // in tools/CMakeLists.txt's order
};

}  // namespace meshlearn::testing
