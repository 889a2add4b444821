#include "node/host/checkpoint.h"

#include <msgpack.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "base/atomic_file.h"
#include "base/crc32.h"
#include "base/stable_hash.h"

namespace meshlearn::node {
namespace {

constexpr const char* kMagic = "MLCKPT";
constexpr uint32_t kVersion = 2;

using Packer = msgpack::packer<msgpack::sbuffer>;

void PackFloats(Packer& pk, const std::vector<float>& values) {
  pk.pack_bin(static_cast<uint32_t>(values.size() * sizeof(float)));
  pk.pack_bin_body(reinterpret_cast<const char*>(values.data()),
                   static_cast<uint32_t>(values.size() * sizeof(float)));
}

std::vector<float> UnpackFloats(const msgpack::object& o) {
  if (o.type != msgpack::type::BIN || o.via.bin.size % sizeof(float) != 0) {
    throw msgpack::type_error();
  }
  std::vector<float> values(o.via.bin.size / sizeof(float));
  if (!values.empty()) std::memcpy(values.data(), o.via.bin.ptr, o.via.bin.size);
  return values;
}

const msgpack::object* Array(const msgpack::object& o, uint32_t size) {
  if (o.type != msgpack::type::ARRAY || o.via.array.size < size) throw msgpack::type_error();
  return o.via.array.ptr;
}

// The round state shared by both format versions: round, stopped, learner, sampler, comm,
// peers, rng_state (7 items).
void PackState(Packer& pk, const Checkpoint& c) {
  pk.pack(c.round);
  pk.pack(c.stopped);
  const LearnerState& l = c.learner;
  // The 11th field, privacy_steps, was appended later; readers accept 10 or more fields.
  pk.pack_array(11);
  PackFloats(pk, l.weights);
  pk.pack(l.best_loss);
  pk.pack(l.best_round);
  PackFloats(pk, l.best_weights);
  pk.pack(l.rounds_without_improvement);
  pk.pack(l.val_loss);
  pk.pack(l.val_acc);
  pk.pack(l.test_loss);
  pk.pack(l.test_acc);
  pk.pack(l.train_loss);
  pk.pack(l.privacy_steps);
  const topology::SamplerState& s = c.machine.sampler;
  pk.pack_array(3);
  pk.pack(s.sampler);
  pk.pack(s.round);
  pk.pack_array(static_cast<uint32_t>(s.peers.size()));
  for (const topology::PeerRecord& r : s.peers) {
    pk.pack_array(5);
    pk.pack(r.peer);
    pk.pack(r.score.has_value());
    pk.pack(r.score.value_or(0.0));
    pk.pack(r.sampled_directly);
    pk.pack(r.probability);
  }
  pk.pack_array(static_cast<uint32_t>(c.machine.comm.size()));
  for (const topology::CommRow& r : c.machine.comm) {
    pk.pack_array(3);
    pk.pack(r.peer);
    pk.pack(r.times_sampled);
    pk.pack(r.answered);
  }
  pk.pack_array(static_cast<uint32_t>(c.machine.peers.size()));
  for (const PeerAddress& p : c.machine.peers) {
    // [id, endpoint, public_key]: the key was appended later; readers accept 2 or more fields.
    pk.pack_array(3);
    pk.pack(p.id);
    pk.pack(p.endpoint);
    pk.pack(p.public_key);
  }
  pk.pack(c.machine.rng_state);
}

// Reads PackState's 7 items starting at `items`; throws msgpack::type_error on a wrong shape.
void UnpackState(const msgpack::object* items, Checkpoint& c) {
  c.round = items[0].as<int64_t>();
  c.stopped = items[1].as<bool>();
  const msgpack::object* l = Array(items[2], 10);
  c.learner.weights = UnpackFloats(l[0]);
  c.learner.best_loss = l[1].as<double>();
  c.learner.best_round = l[2].as<int64_t>();
  c.learner.best_weights = UnpackFloats(l[3]);
  c.learner.rounds_without_improvement = l[4].as<int>();
  c.learner.val_loss = l[5].as<double>();
  c.learner.val_acc = l[6].as<double>();
  c.learner.test_loss = l[7].as<double>();
  c.learner.test_acc = l[8].as<double>();
  c.learner.train_loss = l[9].as<double>();
  if (items[2].via.array.size > 10) c.learner.privacy_steps = l[10].as<int64_t>();
  const msgpack::object* s = Array(items[3], 3);
  c.machine.round = c.round;
  c.machine.sampler.sampler = s[0].as<std::string>();
  c.machine.sampler.round = s[1].as<int64_t>();
  const msgpack::object* records = Array(s[2], 0);
  for (uint32_t i = 0; i < s[2].via.array.size; ++i) {
    const msgpack::object* r = Array(records[i], 5);
    topology::PeerRecord record;
    record.peer = r[0].as<std::string>();
    if (r[1].as<bool>()) record.score = r[2].as<double>();
    record.sampled_directly = r[3].as<bool>();
    record.probability = r[4].as<double>();
    c.machine.sampler.peers.push_back(std::move(record));
  }
  const msgpack::object* comm = Array(items[4], 0);
  for (uint32_t i = 0; i < items[4].via.array.size; ++i) {
    const msgpack::object* r = Array(comm[i], 3);
    c.machine.comm.push_back({r[0].as<std::string>(), r[1].as<uint64_t>(), r[2].as<uint64_t>()});
  }
  const msgpack::object* peers = Array(items[5], 0);
  for (uint32_t i = 0; i < items[5].via.array.size; ++i) {
    const msgpack::object* p = Array(peers[i], 2);
    std::string key = peers[i].via.array.size > 2 ? p[2].as<std::string>() : "";
    c.machine.peers.push_back({p[0].as<std::string>(), p[1].as<std::string>(), std::move(key)});
  }
  c.machine.rng_state = items[6].as<std::string>();
}

// The top-k estimates (format 2's optional 10th body item): [owner, peers], owner nil or
// [start_round, base_round, base, estimate, [[round, blob, checksum]...]], peers
// [[peer, start_round, round, values]...], most recently used first.
void PackEstimates(Packer& pk, const EstimatesState& e) {
  pk.pack_array(2);
  if (e.owner) {
    const EstimateOwnerState& o = *e.owner;
    pk.pack_array(5);
    pk.pack(o.start_round);
    pk.pack(o.base_round);
    PackFloats(pk, o.base);
    PackFloats(pk, o.estimate);
    pk.pack_array(static_cast<uint32_t>(o.updates.size()));
    for (const KeptUpdate& u : o.updates) {
      pk.pack_array(3);
      pk.pack(u.round);
      pk.pack_bin(static_cast<uint32_t>(u.blob.size()));
      pk.pack_bin_body(reinterpret_cast<const char*>(u.blob.data()),
                       static_cast<uint32_t>(u.blob.size()));
      pk.pack(u.checksum);
    }
  } else {
    pk.pack_nil();
  }
  pk.pack_array(static_cast<uint32_t>(e.peers.size()));
  for (const PeerEstimateState& p : e.peers) {
    pk.pack_array(4);
    pk.pack(p.peer);
    pk.pack(p.held.start_round);
    pk.pack(p.held.round);
    PackFloats(pk, p.values);
  }
}

// Reads PackEstimates' item; throws msgpack::type_error on a wrong shape.
EstimatesState UnpackEstimates(const msgpack::object& o) {
  EstimatesState e;
  const msgpack::object* items = Array(o, 2);
  if (items[0].type != msgpack::type::NIL) {
    const msgpack::object* owner = Array(items[0], 5);
    EstimateOwnerState state;
    state.start_round = owner[0].as<int64_t>();
    state.base_round = owner[1].as<int64_t>();
    state.base = UnpackFloats(owner[2]);
    state.estimate = UnpackFloats(owner[3]);
    const msgpack::object* updates = Array(owner[4], 0);
    for (uint32_t i = 0; i < owner[4].via.array.size; ++i) {
      const msgpack::object* u = Array(updates[i], 3);
      if (u[1].type != msgpack::type::BIN) throw msgpack::type_error();
      const auto* bytes = reinterpret_cast<const uint8_t*>(u[1].via.bin.ptr);
      state.updates.push_back(
          {u[0].as<int64_t>(), {bytes, bytes + u[1].via.bin.size}, u[2].as<uint32_t>()});
    }
    e.owner = std::move(state);
  }
  const msgpack::object* peers = Array(items[1], 0);
  for (uint32_t i = 0; i < items[1].via.array.size; ++i) {
    const msgpack::object* p = Array(peers[i], 4);
    e.peers.push_back(
        {p[0].as<std::string>(), {p[1].as<int64_t>(), p[2].as<int64_t>()}, UnpackFloats(p[3])});
  }
  return e;
}

// "key = value" lines of a LearningSettings() text by "section.key".
std::map<std::string, std::string> SettingLines(const std::string& settings) {
  std::map<std::string, std::string> keys;
  std::istringstream lines(settings);
  std::string section;
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > 2 && line.front() == '[') {
      section = line.substr(1, line.find(']') - 1) + ".";
    } else if (size_t eq = line.find(" = "); eq != std::string::npos) {
      keys[section + line.substr(0, eq)] = line.substr(eq + 3);
    }
  }
  return keys;
}

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%0*llx", value > 0xffffffffu ? 16 : 8,
                static_cast<unsigned long long>(value));
  return text;
}

// LearningSettings(config), with the keys that hold their defaults written too when
// `write_defaults`.
std::string LearningSettingsText(const NodeConfig& config, bool write_defaults) {
  // The sections left out go with their values; the keys left out, line by line.
  NodeConfig c = config;
  c.peers.clear();     // [[peers]]
  c.security.reset();  // [security]
  static const std::set<std::string> kLeftOut = {"listen",     "log_level",      "threads",
                                                 "output_dir", "http_port",      "http_bind",
                                                 "data.shard", "training.rounds"};
  std::istringstream lines(RenderNodeConfig(c, write_defaults));
  std::ostringstream kept;
  std::string section;
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > 2 && line.front() == '[') section = line.substr(1, line.find(']') - 1) + ".";
    if (section == "round." || line == "[data]") continue;
    size_t eq = line.find(" = ");
    if (eq != std::string::npos && kLeftOut.count(section + line.substr(0, eq))) continue;
    kept << line << "\n";
  }
  return kept.str();
}

}  // namespace

std::string LearningSettings(const NodeConfig& config) {
  return LearningSettingsText(config, /*write_defaults=*/false);
}

CheckpointIdentity IdentityOf(const NodeConfig& config) {
  CheckpointIdentity identity;
  identity.node_id = config.id;
  identity.seed = config.seed;
  auto shard = ReadWholeFile(config.data.shard);
  if (shard.ok()) identity.shard_hash = StableHash(*shard);
  identity.settings = LearningSettings(config);
  return identity;
}

std::string DescribeIdentityDifference(const CheckpointIdentity& stored,
                                       const CheckpointIdentity& expected) {
  std::vector<std::string> differences;
  auto differ = [&](const std::string& what, const std::string& there, const std::string& here) {
    if (there != here) {
      differences.push_back(what + ": " + there + " in the checkpoint, " + here +
                            " in this config");
    }
  };
  differ("node id", "'" + stored.node_id + "'", "'" + expected.node_id + "'");
  differ("seed", std::to_string(stored.seed), std::to_string(expected.seed));
  differ("shard data", "hash " + Hex(stored.shard_hash), "hash " + Hex(expected.shard_hash));
  // A key one side does not write holds its default there: a checkpoint written before a key
  // existed, or while a section held its defaults, matches a config that states them.
  static const std::map<std::string, std::string> defaults =
      SettingLines(LearningSettingsText(NodeConfig{}, /*write_defaults=*/true));
  auto value_of = [&](const std::map<std::string, std::string>& side, const std::string& key) {
    if (auto it = side.find(key); it != side.end()) return it->second;
    auto it = defaults.find(key);
    return it == defaults.end() ? std::string("(absent)") : it->second;
  };
  std::map<std::string, std::string> there = SettingLines(stored.settings);
  std::map<std::string, std::string> here = SettingLines(expected.settings);
  std::set<std::string> keys;
  for (const auto* side : {&there, &here}) {
    for (const auto& entry : *side) keys.insert(entry.first);
  }
  for (const std::string& key : keys) {
    if (key == "id" || key == "seed") continue;  // reported above
    differ(key, value_of(there, key), value_of(here, key));
  }
  std::string text;
  for (const std::string& d : differences) text += (text.empty() ? "" : "; ") + d;
  return text;
}

std::string EncodeCheckpoint(const Checkpoint& c) {
  msgpack::sbuffer body;
  Packer pk(body);
  // The 10th item, the top-k estimates, and the 11th, why the node halted, were appended later
  // and are written only when set (the 10th as nil when only the 11th is); readers accept 9 or
  // more items.
  const EstimatesState& estimates = c.machine.estimates;
  const bool has_estimates = estimates.owner || !estimates.peers.empty();
  const bool halted = !c.machine.halted.empty();
  pk.pack_array(halted ? 11 : has_estimates ? 10 : 9);
  const CheckpointIdentity identity = c.identity.value_or(CheckpointIdentity{});
  pk.pack_array(4);
  pk.pack(identity.node_id);
  pk.pack(identity.seed);
  pk.pack(identity.shard_hash);
  pk.pack(identity.settings);
  pk.pack(c.machine.wall_seconds);
  PackState(pk, c);
  if (has_estimates) {
    PackEstimates(pk, estimates);
  } else if (halted) {
    pk.pack_nil();
  }
  if (halted) pk.pack(c.machine.halted);

  msgpack::sbuffer file;
  Packer outer(file);
  outer.pack_array(4);
  outer.pack(std::string(kMagic));
  outer.pack(kVersion);
  outer.pack(Crc32(std::string_view(body.data(), body.size())));
  outer.pack_bin(static_cast<uint32_t>(body.size()));
  outer.pack_bin_body(body.data(), static_cast<uint32_t>(body.size()));
  return std::string(file.data(), file.size());
}

Result<Checkpoint> DecodeCheckpoint(const std::string& bytes, const std::string& name) {
  const std::string fix = "; delete it to start the node from round 0";
  try {
    msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
    const msgpack::object& top = handle.get();
    if (top.type != msgpack::type::ARRAY || top.via.array.size < 2 ||
        top.via.array.ptr[0].type != msgpack::type::STR ||
        top.via.array.ptr[0].as<std::string>() != kMagic) {
      return Status::Malformed(
          name + ": not a meshlearn checkpoint (or its first bytes are corrupt)" + fix);
    }
    uint32_t version = top.via.array.ptr[1].as<uint32_t>();
    Checkpoint c;
    if (version == 1) {
      UnpackState(Array(top, 9) + 2, c);
      return c;
    }
    if (version != kVersion) {
      return Status::UnsupportedVersion(name + ": checkpoint format version " +
                                        std::to_string(version) + ", this build reads 1 and " +
                                        std::to_string(kVersion) +
                                        " (written by a newer meshlearn?)" + fix);
    }
    const msgpack::object* outer = Array(top, 4);
    uint32_t stored_crc = outer[2].as<uint32_t>();
    if (outer[3].type != msgpack::type::BIN) throw msgpack::type_error();
    std::string_view body(outer[3].via.bin.ptr, outer[3].via.bin.size);
    if (Crc32(body) != stored_crc) {
      return Status::Malformed(name + ": corrupt checkpoint (its checksum does not match: crc32 " +
                               Hex(Crc32(body)) + ", stored " + Hex(stored_crc) + ")" + fix);
    }
    msgpack::object_handle inner = msgpack::unpack(body.data(), body.size());
    const msgpack::object* items = Array(inner.get(), 9);
    const msgpack::object* id = Array(items[0], 4);
    c.identity = CheckpointIdentity{id[0].as<std::string>(), id[1].as<uint64_t>(),
                                    id[2].as<uint64_t>(), id[3].as<std::string>()};
    UnpackState(items + 2, c);
    c.machine.wall_seconds = items[1].as<double>();
    if (inner.get().via.array.size > 9 && items[9].type != msgpack::type::NIL) {
      c.machine.estimates = UnpackEstimates(items[9]);
    }
    if (inner.get().via.array.size > 10) c.machine.halted = items[10].as<std::string>();
    return c;
  } catch (const std::exception& e) {
    return Status::Malformed(name + ": corrupt checkpoint (" + e.what() + ")" + fix);
  }
}

std::string CheckpointPathOf(const NodeConfig& config) {
  return config.output_dir + "/" + kCheckpointFile;
}

Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint) {
  return WriteFileAtomically(path, EncodeCheckpoint(checkpoint));
}

Result<Checkpoint> ReadCheckpoint(const std::string& path) {
  auto bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return DecodeCheckpoint(*bytes, path);
}

Result<Checkpoint> ReadCheckpointOfRun(const std::string& path,
                                       const CheckpointIdentity& expected) {
  auto checkpoint = ReadCheckpoint(path);
  if (!checkpoint.ok() || !checkpoint->identity) return checkpoint;
  std::string difference = DescribeIdentityDifference(*checkpoint->identity, expected);
  if (difference.empty()) return checkpoint;
  return Status::InvalidArgument(
      path + ": this checkpoint belongs to another run (" + difference +
      "). Point output_dir at this run's own folder, or delete the checkpoint to start the node "
      "from round 0");
}

}  // namespace meshlearn::node
