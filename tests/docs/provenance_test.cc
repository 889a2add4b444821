// The result pages' provenance lines against the manifests kept in results/. Each result set on
// docs/results.md and docs/robustness.md has one line of provenance beside its table:
//
//   Provenance: `results/<folder>/` · <builds> · <dates> · <command>
//
// <builds> lists the builds that ran the set's launches, each a backticked commit, a dirty one
// followed by "(dirty, ...)", which names "diff `<hash>`" when its manifest recorded the diff's
// hash;
// <dates> is the day the launches started, or "<first> to <last>". Every manifest.toml under
// results/ belongs to the line whose folder is its longest prefix. The builds a line states must
// be exactly its manifests' launches' builds, and its dates their first and last start: a page
// that names a commit which did not run the data, or leaves out one that did, fails here, and so
// does a kept manifest that no page accounts for.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace meshlearn {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = MESHLEARN_SOURCE_DIR;

// The pages that state result sets.
const std::vector<std::string> kPages = {"docs/results.md", "docs/robustness.md"};

// One build that ran a launch: its short commit (7 hex digits), whether its tree was dirty, and
// the diff's hash when the manifest recorded one.
using Build = std::tuple<std::string, bool, std::string>;

std::string Describe(const Build& build) {
  const auto& [commit, dirty, diff] = build;
  return "`" + commit + "`" +
         (dirty ? " (dirty" + (diff.empty() ? "" : ", diff `" + diff + "`") + ")" : "");
}

std::string Describe(const std::set<Build>& builds) {
  std::string text;
  for (const Build& build : builds) text += (text.empty() ? "" : ", ") + Describe(build);
  return text;
}

// What a manifest says of its launches: the builds, and the days they started (YYYY-MM-DD).
struct Launches {
  std::set<Build> builds;
  std::set<std::string> days;
};

// Reads the [[launches]] tables of the manifest at `path`: each one's `version`
// ('<semver>+git.<commit>[-dirty]'), `diff_hash` and `started`.
Launches ReadLaunches(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  Launches launches;
  bool in_launch = false;
  std::string version, diff, started;
  auto flush = [&] {
    if (!in_launch) return;
    std::smatch m;
    if (std::regex_match(version, m, std::regex(R"(.*\+git\.([0-9a-f]{7})[0-9a-f]*(-dirty)?)"))) {
      launches.builds.insert({m[1], m[2].matched, diff});
    } else {
      ADD_FAILURE() << path << ": a launch's version '" << version << "' names no commit";
    }
    if (started.size() >= 10) launches.days.insert(started.substr(0, 10));
    version.clear();
    diff.clear();
    started.clear();
  };
  const std::regex key(R"(^(version|diff_hash|started) = '([^']*)')");
  while (std::getline(in, line)) {
    if (line.rfind("[", 0) == 0) {
      flush();
      in_launch = line == "[[launches]]";
      continue;
    }
    std::smatch m;
    if (!in_launch || !std::regex_search(line, m, key)) continue;
    (m[1] == "version" ? version : m[1] == "diff_hash" ? diff : started) = m[2];
  }
  flush();
  return launches;
}

// One provenance line of a page.
struct Provenance {
  std::string where;   // "docs/results.md:123"
  std::string folder;  // "results/stragglers/"
  std::set<Build> builds;
  std::string first_day, last_day;
};

// The provenance lines of `page`. A line that starts "Provenance:" but does not read as one fails.
std::vector<Provenance> ProvenanceLines(const std::string& page) {
  std::vector<Provenance> lines;
  std::ifstream in(kRoot / page);
  std::string line;
  const std::regex form(R"(^Provenance: \[?`(results/[^`]*/)`(\]\([^)]*\))? · ([^·]+) · )"
                        R"(([0-9]{4}-[0-9]{2}-[0-9]{2})( to ([0-9]{4}-[0-9]{2}-[0-9]{2}))? · .+)");
  const std::regex build(R"(`([0-9a-f]{7})`( \(dirty([^)]*)\))?)");
  const std::regex diff(R"(diff `([0-9a-f]+)`)");
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.rfind("Provenance:", 0) != 0) continue;
    const std::string where = page + ":" + std::to_string(number);
    std::smatch m;
    if (!std::regex_match(line, m, form)) {
      ADD_FAILURE() << where << ": a provenance line reads \"Provenance: `results/<folder>/` · "
                    << "<builds> · <date>[ to <date>] · <command>\", not: " << line;
      continue;
    }
    Provenance provenance{where, m[1], {}, m[4], m[6].matched ? m[6].str() : m[4].str()};
    const std::string builds = m[3];
    for (std::sregex_iterator b(builds.begin(), builds.end(), build), end; b != end; ++b) {
      const std::string note = (*b)[3];
      std::smatch d;
      const bool has_diff = std::regex_search(note, d, diff);
      provenance.builds.insert({(*b)[1], (*b)[2].matched, has_diff ? d[1].str() : ""});
    }
    EXPECT_FALSE(provenance.builds.empty()) << where << ": the line names no build";
    lines.push_back(provenance);
  }
  return lines;
}

TEST(Provenance, EveryLineStatesTheBuildsAndDaysOfItsManifests) {
  std::vector<Provenance> lines;
  for (const std::string& page : kPages) {
    for (Provenance& p : ProvenanceLines(page)) lines.push_back(std::move(p));
  }
  ASSERT_FALSE(lines.empty()) << "no page has a provenance line";
  // folder → the launches of the manifests whose longest stated prefix it is
  std::map<std::string, Launches> kept;
  for (const Provenance& p : lines) {
    EXPECT_TRUE(fs::is_directory(kRoot / p.folder))
        << p.where << ": " << p.folder << " is not kept";
    kept[p.folder];
  }
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / "results")) {
    if (entry.path().filename() != "manifest.toml") continue;
    const std::string path = fs::relative(entry.path(), kRoot).generic_string();
    std::string owner;
    for (const auto& [folder, launches] : kept) {
      if (path.rfind(folder, 0) == 0 && folder.size() > owner.size()) owner = folder;
    }
    if (owner.empty()) {
      ADD_FAILURE() << path << " is kept, but no provenance line on " << kPages[0] << " or "
                    << kPages[1] << " names a folder that holds it";
      continue;
    }
    const Launches launches = ReadLaunches(entry.path());
    EXPECT_FALSE(launches.builds.empty()) << path << " records no launch";
    kept[owner].builds.insert(launches.builds.begin(), launches.builds.end());
    kept[owner].days.insert(launches.days.begin(), launches.days.end());
  }
  for (const Provenance& p : lines) {
    const Launches& launches = kept.at(p.folder);
    if (launches.builds.empty()) {
      ADD_FAILURE() << p.where << ": " << p.folder << " holds no manifest of its own";
      continue;
    }
    EXPECT_EQ(Describe(p.builds), Describe(launches.builds))
        << p.where << ": the builds stated for " << p.folder << " are not its manifests'";
    EXPECT_EQ(p.first_day + " to " + p.last_day,
              *launches.days.begin() + " to " + *launches.days.rbegin())
        << p.where << ": the dates stated for " << p.folder << " are not its launches' first and "
        << "last";
  }
}

}  // namespace
}  // namespace meshlearn
