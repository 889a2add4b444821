#pragma once
// Node keys as the node's own key descriptions name them (NodeConfig::Describe), for the launcher
// code that must speak of a key (a scenario's errors, a preset's notes, the keys a launcher sets
// itself) without spelling it: tools/ holds node settings as NodeConfig values and finds a key's
// name from the member that holds it, so no node key is written twice.

#include <optional>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "node/config/config.h"

namespace meshlearn::launch {

namespace internal {

// A `keys` object for NodeConfig::Describe that looks for the key holding one member, and lists
// every key and the sections of the level it walks.
class KeyFinder {
 public:
  // Looks for the member at `target` of type `type` (a section's first member shares its
  // address).
  KeyFinder(const void* target, const std::type_info& type, std::string prefix = "")
      : target_(target), type_(type), prefix_(std::move(prefix)) {}

  // The dotted name found ("" when none).
  const std::string& found() const { return found_; }
  // Every key walked, dotted, in description order (sections' keys, not the sections).
  const std::vector<std::string>& keys() const { return keys_; }
  // The sections of the walked level, with their members, in description order.
  const std::vector<std::pair<std::string, const void*>>& sections() const { return sections_; }

  template <class T, class... Rest>
  void Key(const char* key, const T& out, const Rest&...) {
    keys_.push_back(prefix_ + key);
    Match(key, out);
  }
  template <class T>
  void Match(const char* key, const T& out) {
    if (found_.empty() && static_cast<const void*>(&out) == target_ && typeid(T) == type_) {
      found_ = prefix_ + key;
    }
  }
  template <class T, class... Rest>
  void NodeId(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void Endpoint(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void String(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void PublicKey(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void PublicKeyList(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void Choice(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void Integer(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void Number(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void OptionalNumber(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void PositiveNumber(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void NumberOrWord(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void Port(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void Bool(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void ClusterIds(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void NodeIdList(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void Edges(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }
  template <class T, class... Rest>
  void Peers(const char* k, const T& o, const Rest&... r) {
    Key(k, o, r...);
  }

  template <class S, class... Rest>
  void Section(const char* key, const S& section, const Rest&...) {
    Match(key, section);
    sections_.emplace_back(key, &section);
    Walk(key, section);
  }
  template <class S>
  void OptionalSection(const char* key, const std::optional<S>& section) {
    Match(key, section);
    sections_.emplace_back(key, &section);
    Walk(key, section ? *section : S{});
  }

 private:
  template <class S>
  void Walk(const char* key, const S& section) {
    KeyFinder sub(target_, type_, prefix_ + key + ".");
    S::Describe(sub, section);
    if (found_.empty()) found_ = sub.found();
    keys_.insert(keys_.end(), sub.keys().begin(), sub.keys().end());
  }

  const void* target_;
  const std::type_info& type_;
  std::string prefix_;
  std::string found_;
  std::vector<std::string> keys_;
  std::vector<std::pair<std::string, const void*>> sections_;
};

}  // namespace internal

// The dotted name ("learning.clusters", "training", "seed") of the key or section of `config`
// that `member` (a member of `config`, at any depth) holds, by NodeConfig::Describe; "" when no
// key holds it.
template <class Member>
std::string NodeKeyName(const node::NodeConfig& config, const Member& member) {
  internal::KeyFinder finder(&member, typeid(Member));
  node::NodeConfig::Describe(finder, config);
  return finder.found();
}

// Every key of a node config, dotted ("learning.tau", "seed"), by NodeConfig::Describe.
std::vector<std::string> NodeKeyNames();

// The node config sections a scenario's [node] template and [[methods]] may set: every section
// but the ones the launcher fills per node ([data]: the node's shard; [security]: its keys).
std::vector<std::string> ScenarioNodeSections();

// `config` as the node's key writer writes it with every default (node::RenderNodeConfig), read
// back as a table: every key a config has, with its value.
toml::table NodeKeysTable(const node::NodeConfig& config);

// The keys whose values differ between `before` and `after`: sections of them, holding the
// values of `after` (NodeKeysTable's).
toml::table ChangedNodeKeys(const node::NodeConfig& before, const node::NodeConfig& after);

}  // namespace meshlearn::launch
