#pragma once
// One canonical message of every type, shared by the round-trip tests and the fixture writer.
// Changing a sample changes the checked-in fixtures: regenerate them only for a new version.
// Also one compressed blob of every codec (protocol/compression.h), shared by the codec tests and
// the decode fuzzer's seeds.

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "protocol/compression.h"
#include "protocol/messages.h"
#include "protocol/version.h"

namespace meshlearn::testing {

// A small model layout: a 2x3 weight and a 3-element bias.
inline ParamLayout SampleLayout() {
  return MakeContiguousLayout({{"fc.weight", {2, 3}}, {"fc.bias", {3}}});
}

// Nine finite floats matching SampleLayout().
inline std::vector<float> SampleWeights() {
  return {0.5f, -1.25f, 3.0f, 1e-3f, -7.5f, 2.0f, 0.0f, 42.0f, -0.125f};
}

// One message per type of protocol `version`, in type-number order, as a node of that version
// sends them (its envelopes carry protocol_version = `version`). Version 1 has types 1 to 16,
// version 2 adds Goodbye (17); version 3 adds optional fields only (OptionalFieldSamples).
inline std::vector<Message> SampleMessages(uint16_t version = kProtocolVersion) {
  Hello hello{"tcp://127.0.0.2:5555", "cnn/10", "cos_weights", "", 0x1234567890abcdefull};
  HelloAck ack;
  static_cast<Hello&>(ack) = Hello{"tcp://127.0.0.3:5556", "cnn/10", "cos_weights",
                                   "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", 77};
  PeerList peers{{{"node-1", "tcp://127.0.0.2:5555", ""}, {"node-2", "tcp://127.0.0.3:5556", ""}}};
  Model model;
  model.round = 12;
  model.train_size = 500;
  model.early_stopped = true;
  model.layout = SampleLayout();
  model.score_row = {{"node-1", 0.75}, {"node-3", -0.5}};
  model.weights = FloatArray::Own(SampleWeights());
  EmbedRequest embed;
  embed.projection_seed = 99;
  embed.max_samples = 512;
  embed.layout = SampleLayout();
  embed.weights = FloatArray::Own(SampleWeights());
  EmbedReply reply;
  reply.rows = 3;
  reply.cols = 3;
  reply.embeddings = FloatArray::Own(SampleWeights());
  Pong pong;
  pong.nonce = 8;
  WitnessEmbedRequest witness_embed;
  witness_embed.projection_seed = 99;
  witness_embed.max_samples = 256;
  witness_embed.session = 0xfeedull;
  witness_embed.witness = {"node-2", "tcp://127.0.0.4:5557", ""};
  witness_embed.layout = SampleLayout();
  witness_embed.weights = FloatArray::Own(SampleWeights());
  WitnessRows witness_rows;
  witness_rows.session = 0xfeedull;
  witness_rows.requester = "node-0";
  witness_rows.responder = "node-1";
  witness_rows.side = WitnessSide::kResponderValidation;
  witness_rows.rows = 3;
  witness_rows.cols = 3;
  witness_rows.embeddings = FloatArray::Own(SampleWeights());

  Signature signature;
  signature.rows = 3;
  signature.cols = 3;
  signature.centroids = FloatArray::Own(SampleWeights());

  std::vector<Message> messages;
  messages.push_back(MakeMessage("node-0", 1, 0, hello));
  messages.push_back(MakeMessage("node-1", 1, 0, ack));
  messages.push_back(MakeMessage("node-0", 2, 3, peers));
  messages.push_back(MakeMessage("node-0", 3, 13, GetModel{12, true}));
  messages.push_back(MakeMessage("node-1", 3, 13, model));
  messages.push_back(MakeMessage("node-0", 4, 1, embed));
  messages.push_back(MakeMessage("node-1", 4, 1, reply));
  messages.push_back(MakeMessage("node-0", 5, 1, EmdDecision{true, 0.125, 0.0625, std::nullopt}));
  messages.push_back(MakeMessage("node-0", 6, 2, Ping{7}));
  messages.push_back(MakeMessage("node-1", 6, 2, pong));
  messages.push_back(MakeMessage("node-1", 7, 2, Error{ErrorCode::kLayoutMismatch, "bad layout"}));
  messages.push_back(MakeMessage("node-0", 8, 1, witness_embed));
  messages.push_back(MakeMessage("node-1", 9, 1, witness_rows));
  messages.push_back(MakeMessage("node-2", 9, 1, WitnessResult{0xfeedull, 0.03125}));
  messages.push_back(MakeMessage("node-0", 10, 1, GetSignature{}));
  messages.push_back(MakeMessage("node-1", 10, 1, signature));
  if (version >= kGoodbyeVersion) {
    messages.push_back(MakeMessage("node-2", 11, 7, Goodbye{"stopped by signal"}));
  }
  for (Message& message : messages) message.envelope.protocol_version = version;
  return messages;
}

// Fixture file format: uint32 LE frame count, then per frame a uint32 LE length and the bytes.
inline bool WriteFrames(const std::string& path, const std::vector<Frame>& frames) {
  std::ofstream out(path, std::ios::binary);
  auto put32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  put32(static_cast<uint32_t>(frames.size()));
  for (const Frame& f : frames) {
    put32(static_cast<uint32_t>(f.size()));
    out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  }
  return static_cast<bool>(out);
}

// Reads a fixture written by WriteFrames; an empty result means the file is missing or short.
inline std::vector<Frame> ReadFrames(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  auto get32 = [&](uint32_t* v) {
    return static_cast<bool>(in.read(reinterpret_cast<char*>(v), 4));
  };
  uint32_t count = 0;
  if (!get32(&count) || count > 16) return {};
  std::vector<Frame> frames;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t size = 0;
    if (!get32(&size) || size > (1u << 20)) return {};
    std::vector<uint8_t> bytes(size);
    if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) return {};
    frames.emplace_back(std::move(bytes));
  }
  return frames;
}

// The fixture file name of a message type in protocol `version`, e.g. "v1_GetModel.frames".
inline std::string FixtureName(MessageType type, uint16_t version) {
  return "v" + std::to_string(version) + "_" + MessageTypeName(type) + ".frames";
}

// The protocol versions with checked-in fixtures: every one since 1, this build's included.
inline std::vector<uint16_t> FixtureVersions() {
  std::vector<uint16_t> versions;
  for (uint16_t v = 1; v <= kProtocolVersion; ++v) versions.push_back(v);
  return versions;
}

// A finite update matching SampleLayout() (Model.update).
inline std::vector<float> SampleUpdate() {
  return {-0.03125f, 0.25f, 0.0f, 1e-5f, -2.5f, 0.5f, 0.125f, -0.75f, 3.0f};
}

// A sample message with its optional trailing fields set, and the name of its fixture.
struct OptionalFieldSample {
  std::string fixture;  // e.g. "v1_Model_update.frames"
  Message message;
};

// Nine floats matching SampleLayout() that int8 with any block size holds exactly: multiples of
// 0.125 whose largest magnitude is 127 * 0.125, so the block's scale is 0.125.
inline std::vector<float> SampleInt8Weights() {
  return {0.5f, -1.25f, 3.0f, 0.125f, -7.5f, 2.0f, 0.0f, 15.875f, -0.125f};
}

// A top-k chain over SampleLayout(): lineage 4, from round 10 to 12, with the base whole
// (SampleWeights()) and two updates keeping 2 of the 9 values (int8 in blocks of 64), the checksum
// that of the estimate they lead to.
inline EstimateChain SampleChain() {
  CompressionSettings topk;
  topk.codec = CompressionCodec::kTopK;
  topk.topk_fraction = 0.25;
  topk.block_size = 64;
  PublicEstimate estimate(SampleWeights());
  EstimateChain chain{4, 10, 12, 0, FloatArray::Own(SampleWeights()), {}};
  for (const std::vector<float>& model :
       {std::vector<float>{0.5f, -1.25f, 3.0f, 1e-3f, -7.5f, 2.0f, 0.0f, 40.0f, -0.125f},
        std::vector<float>{0.5f, -1.25f, 5.0f, 1e-3f, -7.5f, 2.0f, 0.5f, 40.0f, -0.125f}}) {
    chain.updates.push_back(*estimate.EncodeUpdate(model, topk));
  }
  chain.checksum = EstimateChecksum(estimate.values());
  return chain;
}

// SampleInt8Weights() as int8 in blocks of 64, the encoding of the compressed samples.
inline CompressionSettings SampleInt8Encoding() {
  CompressionSettings int8;
  int8.codec = CompressionCodec::kInt8;
  int8.block_size = 64;
  return int8;
}

// GetModel with with_update and Model with an update (in that order), otherwise the
// SampleMessages(`version`) of their types; from version 3 then (kCompressedModelVersion,
// kCompressedEmbeddingVersion) also, in this order, GetModel accepting fp16 and int8, GetModel
// accepting topk too with its estimate, Model with SampleInt8Weights() in int8 blocks of 64,
// Model with SampleChain(), EmbedRequest accepting fp16 and int8, and EmbedReply and WitnessRows
// with SampleInt8Weights() in int8 blocks of 64. The v<version>_<Type>.frames
// fixtures keep the messages without the optional fields.
inline std::vector<OptionalFieldSample> OptionalFieldSamples(uint16_t version = kProtocolVersion) {
  std::vector<OptionalFieldSample> samples, compressed_samples;
  std::string prefix = "v" + std::to_string(version) + "_";
  const bool compressed = version >= kCompressedModelVersion;
  const bool embeddings = version >= kCompressedEmbeddingVersion;
  for (Message message : SampleMessages(version)) {
    if (auto* get = std::get_if<GetModel>(&message.body)) {
      if (compressed) {
        Message accepting = message;
        std::get<GetModel>(accepting.body).accepts = {CompressionCodec::kFp16,
                                                      CompressionCodec::kInt8};
        compressed_samples.push_back({prefix + "GetModel_accepts.frames", accepting});
        GetModel& estimate = std::get<GetModel>(accepting.body);
        estimate.accepts.push_back(CompressionCodec::kTopK);
        estimate.estimate = HeldEstimate{-1, 9};
        compressed_samples.push_back({prefix + "GetModel_estimate.frames", std::move(accepting)});
      }
      get->with_update = true;
      samples.push_back({prefix + "GetModel_update.frames", std::move(message)});
    } else if (auto* model = std::get_if<Model>(&message.body)) {
      if (compressed) {
        Message int8 = message;
        Model& m = std::get<Model>(int8.body);
        m.weights = FloatArray::Own(SampleInt8Weights());
        m.encoding = SampleInt8Encoding();
        compressed_samples.push_back({prefix + "Model_int8.frames", int8});
        Model& topk = std::get<Model>(int8.body);
        topk.weights = FloatArray();
        topk.encoding = CompressionSettings{};  // a decoded top-k Model without update: defaults
        topk.encoding.codec = CompressionCodec::kTopK;
        topk.chain = SampleChain();
        compressed_samples.push_back({prefix + "Model_topk.frames", std::move(int8)});
      }
      model->update = FloatArray::Own(SampleUpdate());
      samples.push_back({prefix + "Model_update.frames", std::move(message)});
    } else if (auto* embed = std::get_if<EmbedRequest>(&message.body); embed && embeddings) {
      embed->accepts = {CompressionCodec::kFp16, CompressionCodec::kInt8};
      compressed_samples.push_back({prefix + "EmbedRequest_accepts.frames", std::move(message)});
    } else if (auto* reply = std::get_if<EmbedReply>(&message.body); reply && embeddings) {
      reply->embeddings = FloatArray::Own(SampleInt8Weights());
      reply->encoding = SampleInt8Encoding();
      compressed_samples.push_back({prefix + "EmbedReply_int8.frames", std::move(message)});
    } else if (auto* rows = std::get_if<WitnessRows>(&message.body); rows && embeddings) {
      rows->embeddings = FloatArray::Own(SampleInt8Weights());
      rows->encoding = SampleInt8Encoding();
      compressed_samples.push_back({prefix + "WitnessRows_int8.frames", std::move(message)});
    }
  }
  for (OptionalFieldSample& sample : compressed_samples) samples.push_back(std::move(sample));
  return samples;
}

// 160 finite values for the compressed samples: zeros, exact binary fractions and magnitudes from
// 1e-3 to 1e3, so that every codec's blocks, scales and index gaps vary.
inline std::vector<float> SampleCompressedValues() {
  std::vector<float> values(160);
  for (size_t i = 0; i < values.size(); ++i) {
    const float magnitude = (i % 11 == 0) ? 0.0f : static_cast<float>(i % 13) * 0.125f;
    values[i] = magnitude * ((i % 3 == 0) ? -1.0f : 1.0f) * (i % 17 == 5 ? 1e3f : 1.0f) *
                (i % 19 == 7 ? 1e-2f : 1.0f);
  }
  return values;
}

// A compressed blob of SampleCompressedValues() and what made it.
struct CompressedSample {
  std::string name;  // e.g. "topk_int8"
  std::vector<uint8_t> blob;
  size_t count = 0;  // the values it holds
};

// One blob of every codec and top-k value codec: none, fp16, int8 (blocks of 64), top-k at 10%
// with fp16 values and with int8 values (blocks of 64).
inline std::vector<CompressedSample> CompressedSamples() {
  const std::vector<float> values = SampleCompressedValues();
  auto settings = [](CompressionCodec codec, CompressionCodec topk_values) {
    CompressionSettings s;
    s.codec = codec;
    s.block_size = 64;
    s.topk_fraction = 0.1;
    s.topk_values = topk_values;
    return s;
  };
  const std::pair<const char*, CompressionSettings> cases[] = {
      {"none", settings(CompressionCodec::kNone, CompressionCodec::kInt8)},
      {"fp16", settings(CompressionCodec::kFp16, CompressionCodec::kInt8)},
      {"int8", settings(CompressionCodec::kInt8, CompressionCodec::kInt8)},
      {"topk_fp16", settings(CompressionCodec::kTopK, CompressionCodec::kFp16)},
      {"topk_int8", settings(CompressionCodec::kTopK, CompressionCodec::kInt8)},
  };
  std::vector<CompressedSample> samples;
  for (const auto& [name, s] : cases) {
    auto blob = EncodeCompressed(values, s);
    samples.push_back({name, blob.ok() ? *blob : std::vector<uint8_t>{}, values.size()});
  }
  return samples;
}

}  // namespace meshlearn::testing
