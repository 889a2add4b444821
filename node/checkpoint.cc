#include "node/checkpoint.h"

#include <msgpack.hpp>

#include <cstring>

#include "base/atomic_file.h"

namespace meshlearn::node {
namespace {

constexpr const char* kMagic = "MLCKPT";
constexpr uint32_t kVersion = 1;

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

}  // namespace

std::string EncodeCheckpoint(const Checkpoint& c) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  pk.pack_array(9);
  pk.pack(std::string(kMagic));
  pk.pack(kVersion);
  pk.pack(c.round);
  pk.pack(c.stopped);
  const LearnerState& l = c.learner;
  pk.pack_array(10);
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
  return std::string(buffer.data(), buffer.size());
}

Result<Checkpoint> DecodeCheckpoint(const std::string& bytes, const std::string& name) {
  try {
    msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
    const msgpack::object* top = Array(handle.get(), 9);
    if (top[0].as<std::string>() != kMagic) {
      return Status::Malformed(name + ": not a meshlearn checkpoint");
    }
    uint32_t version = top[1].as<uint32_t>();
    if (version != kVersion) {
      return Status::UnsupportedVersion(name + ": checkpoint format version " +
                                        std::to_string(version) + ", this build reads " +
                                        std::to_string(kVersion));
    }
    Checkpoint c;
    c.round = top[2].as<int64_t>();
    c.stopped = top[3].as<bool>();
    const msgpack::object* l = Array(top[4], 10);
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
    const msgpack::object* s = Array(top[5], 3);
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
    const msgpack::object* comm = Array(top[6], 0);
    for (uint32_t i = 0; i < top[6].via.array.size; ++i) {
      const msgpack::object* r = Array(comm[i], 3);
      c.machine.comm.push_back({r[0].as<std::string>(), r[1].as<uint64_t>(), r[2].as<uint64_t>()});
    }
    const msgpack::object* peers = Array(top[7], 0);
    for (uint32_t i = 0; i < top[7].via.array.size; ++i) {
      const msgpack::object* p = Array(peers[i], 2);
      std::string key = peers[i].via.array.size > 2 ? p[2].as<std::string>() : "";
      c.machine.peers.push_back({p[0].as<std::string>(), p[1].as<std::string>(), std::move(key)});
    }
    c.machine.rng_state = top[8].as<std::string>();
    return c;
  } catch (const std::exception& e) {
    return Status::Malformed(name + ": corrupt checkpoint (" + e.what() +
                             "); delete it to start the node from round 0");
  }
}

Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint) {
  return WriteFileAtomically(path, EncodeCheckpoint(checkpoint));
}

Result<Checkpoint> ReadCheckpoint(const std::string& path) {
  auto bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return DecodeCheckpoint(*bytes, path);
}

}  // namespace meshlearn::node
