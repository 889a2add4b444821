// Round trips, checked-in version-1 fixtures, and hostile input for the wire codec.
#include "protocol/codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "protocol/version.h"
#include "protocol/wire_text.h"
#include "tests/protocol/sample_messages.h"

namespace meshlearn {
namespace {

using testing::SampleLayout;
using testing::SampleMessages;
using testing::SampleWeights;

std::vector<uint8_t> Concat(const std::vector<Frame>& frames) {
  std::vector<uint8_t> all;
  for (const Frame& f : frames) {
    all.push_back(0xff);  // frame separator so that frame boundaries count too
    all.insert(all.end(), f.bytes().begin(), f.bytes().end());
  }
  return all;
}

class RoundTrip : public ::testing::TestWithParam<size_t> {};

TEST_P(RoundTrip, EncodeDecodeEncodeGivesSameBytesAndEqualMessage) {
  Message original = SampleMessages()[GetParam()];
  std::vector<Frame> frames = Encode(original);
  auto decoded = Decode(frames);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, original);
  EXPECT_EQ(Concat(Encode(*decoded)), Concat(frames));
}

// A body encoded once and sent under another envelope has the bytes of the whole message encoded
// at once, and shares its blobs with the message instead of copying them.
TEST_P(RoundTrip, BodyEncodedOnceGivesTheBytesOfTheWholeMessageUnderAnyEnvelope) {
  Message original = SampleMessages()[GetParam()];
  EncodedBody body = EncodeBody(original.body);
  EXPECT_EQ(body.type, TypeOf(original.body));
  Message other = original;
  other.envelope.request_id = 77;
  other.envelope.round = 9;
  for (const Message& m : {original, other}) {
    std::vector<Frame> frames = Encode(m.envelope, body);
    EXPECT_EQ(Concat(frames), Concat(Encode(m)));
    auto decoded = Decode(frames);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, m);
  }
  if (const auto* model = std::get_if<Model>(&original.body)) {
    ASSERT_EQ(body.frames.size(), 2u);
    EXPECT_EQ(body.frames[1].data(), reinterpret_cast<const uint8_t*>(model->weights.view().data()))
        << "the weights are shared, not copied";
  }
}

// PROTOCOL.md, type 8: the automatic rule's `accepts` travels as a fourth field; without it the
// decision decodes with no list (a fixed ε, or an older node).
TEST(EmdDecisionCodec, AcceptsIsAnOptionalFourthFieldOfIds) {
  Message with = MakeMessage("node-0", 5, 1,
                             EmdDecision{false, 0.5, 0.0625, std::vector<std::string>{"a", "b"}});
  auto decoded = Decode(Encode(with));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, with);
  Message empty = MakeMessage("node-0", 5, 1, EmdDecision{true, 0.5, 0.0625, {{}}});
  decoded = Decode(Encode(empty));
  ASSERT_TRUE(decoded.ok());
  ASSERT_TRUE(std::get<EmdDecision>(decoded->body).accepts.has_value());
  EXPECT_TRUE(std::get<EmdDecision>(decoded->body).accepts->empty());
  decoded =
      Decode(Encode(MakeMessage("node-0", 5, 1, EmdDecision{true, 0.5, 0.0625, std::nullopt})));
  ASSERT_TRUE(decoded.ok());
  EXPECT_FALSE(std::get<EmdDecision>(decoded->body).accepts.has_value());
}

INSTANTIATE_TEST_SUITE_P(EveryType, RoundTrip, ::testing::Range<size_t>(0, SampleMessages().size()),
                         [](const auto& info) {
                           return std::string(
                               MessageTypeName(TypeOf(SampleMessages()[info.param].body)));
                         });

TEST(Fixtures, FixturesOfEveryVersionDecodeToTheSampleMessagesForever) {
  for (uint16_t version : testing::FixtureVersions()) {
    for (const Message& expected : SampleMessages(version)) {
      std::string name = testing::FixtureName(TypeOf(expected.body), version);
      std::vector<Frame> frames = testing::ReadFrames("tests/protocol/testdata/" + name);
      ASSERT_FALSE(frames.empty()) << "missing or short fixture " << name;
      auto decoded = Decode(frames);
      ASSERT_TRUE(decoded.ok()) << name << ": " << decoded.status().ToString();
      EXPECT_EQ(*decoded, expected) << name;
      EXPECT_EQ(decoded->envelope.protocol_version, version) << name;
      EXPECT_EQ(Concat(Encode(*decoded)), Concat(frames)) << name << " re-encodes differently";
    }
  }
}

// PROTOCOL.md, "Versions and compatibility": this build speaks 3 and still 1; Goodbye is the
// first feature of version 2, compressed models of version 3.
TEST(Versions, ThisBuildSpeaksVersion3AndStillVersion1) {
  EXPECT_EQ(kProtocolVersion, 3);
  EXPECT_EQ(kMinProtocolVersion, 1);
  EXPECT_EQ(kGoodbyeVersion, 2);
  EXPECT_EQ(kCompressedModelVersion, 3);
  Message ping = MakeMessage("node-0", 1, 0, Ping{1});
  EXPECT_EQ(ping.envelope.protocol_version, 3);
  EXPECT_EQ(ping.envelope.min_version, 1);
  // A version-1 node's envelope (the v1 fixtures) is accepted.
  auto v1 = Decode(testing::ReadFrames("tests/protocol/testdata/v1_Ping.frames"));
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->envelope.protocol_version, 1);
}

TEST(Versions, GoodbyeIsType17WithItsReason) {
  auto decoded = Decode(testing::ReadFrames("tests/protocol/testdata/v2_Goodbye.frames"));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(static_cast<int>(decoded->envelope.type), 17);
  EXPECT_EQ(std::get<Goodbye>(decoded->body).reason, "stopped by signal");
}

TEST(Codec, ModelWeightsAreViewedNotCopiedOnDecode) {
  Message model = SampleMessages()[4];
  std::vector<Frame> frames = Encode(model);
  auto decoded = Decode(frames);
  ASSERT_TRUE(decoded.ok());
  const auto& weights = std::get<Model>(decoded->body).weights;
  EXPECT_EQ(static_cast<const void*>(weights.view().data()),
            static_cast<const void*>(frames[2].data()));
}

// --- Hostile input ------------------------------------------------------------------------------

Message SampleModel() { return SampleMessages()[4]; }

// Re-encodes frame 0 as an envelope with the given raw fields.
Frame RawEnvelope(uint32_t magic, uint16_t version, uint16_t min_version, uint16_t type) {
  Message m = MakeMessage("node-x", 1, 0, Ping{1});
  m.envelope.magic = magic;
  m.envelope.protocol_version = version;
  m.envelope.min_version = min_version;
  std::vector<Frame> frames = Encode(m);
  // Patch the type: the encoder derives it from the body, so rebuild by hand for unknown ones.
  std::vector<uint8_t> bytes(frames[0].bytes().begin(), frames[0].bytes().end());
  // Layout of the envelope: fixarray(7), uint32 magic (5 bytes), version, min_version, type...
  // Versions < 128 are positive fixints (1 byte); type 9 (Ping) is the 1-byte value to replace.
  size_t type_pos = 1 + 5 + (version < 128 ? 1 : 3) + (min_version < 128 ? 1 : 3);
  EXPECT_EQ(bytes[type_pos], 9);
  if (type < 128) {
    bytes[type_pos] = static_cast<uint8_t>(type);
  } else {
    bytes[type_pos] = 0xcd;  // uint16
    bytes.insert(bytes.begin() + type_pos + 1,
                 {static_cast<uint8_t>(type >> 8), static_cast<uint8_t>(type & 0xff)});
  }
  return Frame(std::move(bytes));
}

ErrorCode DecodeCode(const std::vector<Frame>& frames, const DecodeOptions& options = {}) {
  auto decoded = Decode(frames, options);
  return decoded.ok() ? ErrorCode::kOk : decoded.status().code();
}

// --- Optional trailing fields (GetModel.with_update, Model.update) -----------------------------

TEST(OptionalFields, FixturesDecodeToTheirSamplesAndReEncodeToTheSameBytes) {
  for (uint16_t version : testing::FixtureVersions()) {
    std::vector<testing::OptionalFieldSample> samples = testing::OptionalFieldSamples(version);
    ASSERT_EQ(samples.size(), version >= kCompressedEmbeddingVersion ? 9u : 2u);
    for (const auto& sample : samples) {
      std::vector<Frame> frames = testing::ReadFrames("tests/protocol/testdata/" + sample.fixture);
      ASSERT_FALSE(frames.empty()) << "missing or short fixture " << sample.fixture;
      auto decoded = Decode(frames);
      ASSERT_TRUE(decoded.ok()) << sample.fixture << ": " << decoded.status().ToString();
      EXPECT_EQ(*decoded, sample.message) << sample.fixture;
      EXPECT_EQ(Concat(Encode(*decoded)), Concat(frames)) << sample.fixture;
    }
  }
}

TEST(OptionalFields, MessagesWithoutThemKeepTheirVersion1FormAndDecodeAsUnset) {
  // An older node's GetModel and Model (the v1 fixtures) mean "no update asked" and "none sent".
  auto get = Decode(testing::ReadFrames("tests/protocol/testdata/v1_GetModel.frames"));
  ASSERT_TRUE(get.ok()) << get.status().ToString();
  EXPECT_FALSE(std::get<GetModel>(get->body).with_update);
  auto model = Decode(testing::ReadFrames("tests/protocol/testdata/v1_Model.frames"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_FALSE(std::get<Model>(model->body).update.has_value());
  EXPECT_EQ(Encode(*model).size(), 3u);
  // Setting the fields adds one body field each and, for Model, one blob frame.
  std::vector<Frame> with_update = Encode(testing::OptionalFieldSamples()[1].message);
  ASSERT_EQ(with_update.size(), 4u);
  EXPECT_EQ(with_update[3], BlobOf(FloatArray::Own(testing::SampleUpdate())));
}

Message SampleModelWithUpdate() { return testing::OptionalFieldSamples()[1].message; }

// Expects `frames` to be rejected with `code` and a message that contains every one of `words`.
void ExpectRejected(const std::vector<Frame>& frames, ErrorCode code,
                    std::initializer_list<const char*> words) {
  auto decoded = Decode(frames);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), code) << decoded.status().ToString();
  for (const char* word : words) {
    EXPECT_NE(decoded.status().message().find(word), std::string::npos)
        << word << " not in: " << decoded.status().message();
  }
}

TEST(OptionalFields, UpdateOfAnotherLengthThanTheLayoutIsALayoutMismatch) {
  std::vector<Frame> frames = Encode(SampleModelWithUpdate());
  std::vector<float> longer = testing::SampleUpdate();
  longer.push_back(1.0f);
  frames[3] = BlobOf(FloatArray::Own(longer));
  ExpectRejected(frames, ErrorCode::kLayoutMismatch, {"Model.update"});
}

TEST(OptionalFields, UpdateWithNanOrInfIsRejectedWithItsIndex) {
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    Message m = SampleModelWithUpdate();
    std::vector<float> update = testing::SampleUpdate();
    update[3] = bad;
    std::get<Model>(m.body).update = FloatArray::Own(update);
    ExpectRejected(Encode(m), ErrorCode::kNonFinite, {"Model.update", "#3"});
  }
}

TEST(OptionalFields, ModelWithUpdateMustMatchTheLocalLayout) {
  ParamLayout local = MakeContiguousLayout({{"fc.weight", {3, 2}}, {"fc.bias", {3}}});
  DecodeOptions options;
  options.expected_layout = &local;
  EXPECT_EQ(DecodeCode(Encode(SampleModelWithUpdate()), options), ErrorCode::kLayoutMismatch);
  ParamLayout same = SampleLayout();
  options.expected_layout = &same;
  EXPECT_EQ(DecodeCode(Encode(SampleModelWithUpdate()), options), ErrorCode::kOk);
}

TEST(OptionalFields, UpdateFlagAndBlobCountMustAgree) {
  std::vector<Frame> with = Encode(SampleModelWithUpdate());
  std::vector<Frame> without = Encode(SampleModel());
  // The flag without its blob, and a second blob without the flag.
  EXPECT_EQ(DecodeCode({with[0], with[1], with[2]}), ErrorCode::kMalformed);
  EXPECT_EQ(DecodeCode({without[0], without[1], without[2], with[3]}), ErrorCode::kMalformed);
}

// --- Compressed models (version 3: GetModel.accepts, Model.encoding) ----------------------------

// The v3 sample of fixture `fixture` (OptionalFieldSamples).
Message OptionalSample(const std::string& fixture) {
  for (const testing::OptionalFieldSample& sample : testing::OptionalFieldSamples()) {
    if (sample.fixture == "v3_" + fixture) return sample.message;
  }
  ADD_FAILURE() << "no sample " << fixture;
  return {};
}

// The v3 Model fixture with int8 weights (OptionalFieldSamples).
Message SampleInt8Model() { return OptionalSample("Model_int8.frames"); }

// PROTOCOL.md, "Compressed models": the int8 Model's blob frame holds the compressed bytes of
// protocol/compression.h, and the body names the codec in field 6 (with field 5 written before).
TEST(CompressedModels, Int8ModelCarriesTheInt8BlobAndNamesItsCodec) {
  Message m = SampleInt8Model();
  std::vector<Frame> frames = Encode(m);
  ASSERT_EQ(frames.size(), 3u);
  CompressionSettings int8;
  int8.codec = CompressionCodec::kInt8;
  int8.block_size = 64;
  auto blob = EncodeCompressed(testing::SampleInt8Weights(), int8);
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(frames[2], Frame(*blob));
  EXPECT_EQ(frames[2].size(), 8u + 4u + 9u) << "header, one scale, nine int8 values";
  const std::vector<uint8_t> body(frames[1].bytes().begin(), frames[1].bytes().end());
  ASSERT_GE(body.size(), 3u);
  EXPECT_EQ(body[0], 0x97) << "an array of 7 fields";
  EXPECT_EQ(body[body.size() - 2], 0xc2) << "update = false before the encoding";
  EXPECT_EQ(body.back(), 0x02) << "encoding = 2 (int8)";
  auto decoded = Decode(frames);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, m);
}

// PROTOCOL.md, "Top-k update chains": a top-k Model's frame 2 holds the length-prefixed base and
// updates, field 7 the chain's rounds and checksum; a GetModel's field 4 the estimate held.
TEST(CompressedModels, TopKModelCarriesItsChainAndGetModelItsEstimate) {
  Message m = OptionalSample("Model_topk.frames");
  std::vector<Frame> frames = Encode(m);
  ASSERT_EQ(frames.size(), 3u);
  const EstimateChain& chain = *std::get<Model>(m.body).chain;
  const size_t base_bytes = 8 + 9 * sizeof(float);
  size_t expected = 4 + base_bytes;
  for (const auto& update : chain.updates) expected += 4 + update.size();
  EXPECT_EQ(frames[2].size(), expected);
  EXPECT_EQ(frames[2].bytes()[0], base_bytes) << "the base's length, little-endian";
  EXPECT_EQ(frames[2].bytes()[4], static_cast<uint8_t>(CompressionCodec::kNone));
  EXPECT_EQ(frames[1].bytes()[0], 0x98) << "an array of 8 fields";
  auto decoded = Decode(frames);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, m);
  PublicEstimate estimate(testing::SampleWeights());
  for (const auto& update : std::get<Model>(decoded->body).chain->updates) {
    ASSERT_TRUE(estimate.Apply(update).ok());
  }
  EXPECT_EQ(EstimateChecksum(estimate.values()), chain.checksum);
  EXPECT_EQ(estimate.values()[2], 5.0f) << "the largest changes arrived";

  Message get = OptionalSample("GetModel_estimate.frames");
  auto get_decoded = Decode(Encode(get));
  ASSERT_TRUE(get_decoded.ok());
  EXPECT_EQ(std::get<GetModel>(get_decoded->body).estimate, (HeldEstimate{-1, 9}));
}

// A damaged chain is refused with the code of what is wrong, before anything is applied.
TEST(CompressedModels, ADamagedChainIsRefusedWithItsCode) {
  Message m = OptionalSample("Model_topk.frames");
  std::vector<Frame> frames = Encode(m);
  auto with_chain_frame = [&](std::vector<uint8_t> bytes) {
    return DecodeCode({frames[0], frames[1], Frame(std::move(bytes))});
  };
  const std::vector<uint8_t> good(frames[2].bytes().begin(), frames[2].bytes().end());
  std::vector<uint8_t> truncated(good.begin(), good.end() - 1);
  EXPECT_EQ(with_chain_frame(truncated), ErrorCode::kMalformed) << "the last length overruns";
  std::vector<uint8_t> short_length(good.begin(), good.begin() + 2);
  EXPECT_EQ(with_chain_frame(short_length), ErrorCode::kMalformed);
  std::vector<uint8_t> no_base(good.begin() + 4 + 8 + 36, good.end());
  EXPECT_EQ(with_chain_frame(no_base), ErrorCode::kMalformed) << "has_base, but a topk blob first";
  std::vector<uint8_t> nan_base = good;
  nan_base[4 + 8] = 0x00, nan_base[4 + 9] = 0x00, nan_base[4 + 10] = 0xc0, nan_base[4 + 11] = 0x7f;
  EXPECT_EQ(with_chain_frame(nan_base), ErrorCode::kNonFinite);
  std::vector<uint8_t> wrong_count = good;
  wrong_count[4 + 8 + 36 + 4 + 4] = 8;  // the first update says 8 values, the layout has 9
  EXPECT_EQ(with_chain_frame(wrong_count), ErrorCode::kLayoutMismatch);
  Model too_many = std::get<Model>(m.body);
  too_many.chain->to_round = too_many.chain->from_round + 1;
  EXPECT_EQ(DecodeCode(Encode(MakeMessage("node-1", 3, 13, too_many))), ErrorCode::kMalformed)
      << "two updates for one round";
  Model backwards = std::get<Model>(m.body);
  backwards.chain->from_round = backwards.chain->to_round + 1;
  EXPECT_EQ(DecodeCode(Encode(MakeMessage("node-1", 3, 13, backwards))), ErrorCode::kMalformed);
}

// Lossy values decode to what the codec gives, within half a quantisation step, update included.
TEST(CompressedModels, WeightsAndUpdateDecodeToTheCodecsValues) {
  for (CompressionCodec codec : {CompressionCodec::kFp16, CompressionCodec::kInt8}) {
    Message m = SampleModelWithUpdate();
    Model& model = std::get<Model>(m.body);
    model.encoding.codec = codec;
    std::vector<Frame> frames = Encode(m);
    ASSERT_EQ(frames.size(), 4u);
    auto decoded = Decode(frames);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    const Model& got = std::get<Model>(decoded->body);
    EXPECT_EQ(got.encoding.codec, codec);
    auto weights = DecodeCompressed(frames[2].bytes(), 9);
    auto update = DecodeCompressed(frames[3].bytes(), 9);
    ASSERT_TRUE(weights.ok() && update.ok());
    EXPECT_EQ(std::vector<float>(got.weights.view().begin(), got.weights.view().end()), *weights);
    ASSERT_TRUE(got.update.has_value());
    EXPECT_EQ(std::vector<float>(got.update->view().begin(), got.update->view().end()), *update);
    for (size_t i = 0; i < 9; ++i) {
      EXPECT_NEAR(got.weights.view()[i], SampleWeights()[i], 42.0 / 127 / 2 + 1e-6);
    }
  }
}

// A Model whose floats its codec cannot encode (a NaN) is sent raw, and refused as before.
TEST(CompressedModels, NonFiniteWeightsTravelRawAndAreRefused) {
  Message m = SampleInt8Model();
  std::vector<float> w = testing::SampleInt8Weights();
  w[2] = std::numeric_limits<float>::quiet_NaN();
  std::get<Model>(m.body).weights = FloatArray::Own(w);
  std::vector<Frame> frames = Encode(m);
  EXPECT_EQ(frames[2].size(), 9u * 4u);
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kNonFinite);
}

TEST(CompressedModels, BlobOfAnotherCodecOrCountIsRefusedBeforeTheMerge) {
  std::vector<Frame> frames = Encode(SampleInt8Model());
  CompressionSettings fp16;
  fp16.codec = CompressionCodec::kFp16;
  // The body says int8, the blob is fp16.
  std::vector<Frame> other = frames;
  other[2] = Frame(*EncodeCompressed(testing::SampleInt8Weights(), fp16));
  ExpectRejected(other, ErrorCode::kMalformed, {"Model.weights", "fp16", "int8"});
  // Ten values for a layout of nine.
  CompressionSettings int8;
  int8.codec = CompressionCodec::kInt8;
  std::vector<float> ten = testing::SampleInt8Weights();
  ten.push_back(1.0f);
  other[2] = Frame(*EncodeCompressed(ten, int8));
  ExpectRejected(other, ErrorCode::kLayoutMismatch, {"Model.weights", "10", "9"});
  // A raw float32 blob where int8 is announced.
  other[2] = BlobOf(FloatArray::Own(testing::SampleInt8Weights()));
  EXPECT_NE(DecodeCode(other), ErrorCode::kOk);
  // A NaN scale.
  other[2] = frames[2];
  std::vector<uint8_t> bytes(frames[2].bytes().begin(), frames[2].bytes().end());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bytes.data() + 8, &nan, 4);
  other[2] = Frame(bytes);
  ExpectRejected(other, ErrorCode::kNonFinite, {"Model.weights"});
  // Every truncation of the blob.
  for (size_t len = 0; len < frames[2].size(); ++len) {
    other[2] = Frame::CopyOf(frames[2].data(), len);
    EXPECT_NE(DecodeCode(other), ErrorCode::kOk) << "blob cut to " << len;
  }
}

// Top-k carries updates, not models, and unknown codec numbers are no model codec either.
TEST(CompressedModels, EncodingMustBeAModelCodec) {
  for (uint8_t bad : {3, 4, 127}) {  // positive fixints: one byte, like the 2 they replace
    std::vector<Frame> frames = Encode(SampleInt8Model());
    std::vector<uint8_t> body(frames[1].bytes().begin(), frames[1].bytes().end());
    body.back() = bad;
    frames[1] = Frame(body);
    ExpectRejected(frames, ErrorCode::kMalformed, {"Model.encoding"});
  }
}

// A GetModel's accepts list: unknown codecs are kept (a later codec), at most 16 entries, each a
// uint8.
TEST(CompressedModels, AcceptsKeepsUnknownCodecsAndIsBounded) {
  GetModel get{3, true};
  get.accepts = {CompressionCodec::kInt8, static_cast<CompressionCodec>(9)};
  auto decoded = Decode(Encode(MakeMessage("a", 1, 0, get)));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<GetModel>(decoded->body), get);
  get.accepts.assign(17, CompressionCodec::kFp16);
  EXPECT_EQ(DecodeCode(Encode(MakeMessage("a", 1, 0, get))), ErrorCode::kTooMany);
}

// A version-2 requester sends no accepts: its GetModel and the Model it gets keep their v2 bytes.
TEST(CompressedModels, WithoutTheFieldsMessagesKeepTheirVersion2Bytes) {
  for (const char* type : {"GetModel", "Model"}) {
    std::vector<Frame> v2 =
        testing::ReadFrames(std::string("tests/protocol/testdata/v2_") + type + ".frames");
    std::vector<Frame> v3 =
        testing::ReadFrames(std::string("tests/protocol/testdata/v3_") + type + ".frames");
    ASSERT_EQ(v2.size(), v3.size());
    for (size_t i = 1; i < v2.size(); ++i) EXPECT_EQ(v2[i], v3[i]) << type << " frame " << i;
  }
}

// --- Compressed embeddings (version 3: EmbedRequest.accepts, EmbedReply and WitnessRows encoding)

// The v3 fixtures of OptionalFieldSamples: EmbedRequest accepting fp16 and int8, and EmbedReply
// and WitnessRows with int8 rows.
Message SampleAcceptingEmbedRequest() { return OptionalSample("EmbedRequest_accepts.frames"); }
Message SampleInt8EmbedReply() { return OptionalSample("EmbedReply_int8.frames"); }
Message SampleInt8WitnessRows() { return OptionalSample("WitnessRows_int8.frames"); }

// PROTOCOL.md, "Compressed embeddings": the body names the codec in the field after cols, and the
// blob frame holds protocol/compression.h's bytes, the same blob a Model of those floats carries.
TEST(CompressedEmbeddings, Int8RowsCarryTheInt8BlobAndNameTheirCodecAfterCols) {
  auto blob = EncodeCompressed(testing::SampleInt8Weights(), testing::SampleInt8Encoding());
  ASSERT_TRUE(blob.ok());
  for (const Message& m : {SampleInt8EmbedReply(), SampleInt8WitnessRows()}) {
    std::vector<Frame> frames = Encode(m);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[2], Frame(*blob)) << MessageTypeName(m.envelope.type);
    EXPECT_EQ(frames[2], Encode(SampleInt8Model())[2]);
    const std::vector<uint8_t> body(frames[1].bytes().begin(), frames[1].bytes().end());
    ASSERT_GE(body.size(), 4u);
    EXPECT_EQ(body.back(), 0x02) << "encoding = 2 (int8)";
    EXPECT_EQ(body[body.size() - 2], 0x03) << "after cols = 3";
    auto decoded = Decode(frames);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, m);
    EXPECT_EQ(Concat(Encode(*decoded)), Concat(frames));
  }
  const std::vector<Frame> reply = Encode(SampleInt8EmbedReply());
  const std::vector<uint8_t> reply_body(reply[1].bytes().begin(), reply[1].bytes().end());
  EXPECT_EQ(reply_body, (std::vector<uint8_t>{0x93, 0x03, 0x03, 0x02}));
}

// fp16 and int8 rows decode to the codec's values, within half a quantisation step of the
// originals; a requester measures exactly what arrived.
TEST(CompressedEmbeddings, RowsDecodeToTheCodecsValues) {
  for (CompressionCodec codec : {CompressionCodec::kFp16, CompressionCodec::kInt8}) {
    Message m = SampleMessages()[6];
    EmbedReply& reply = std::get<EmbedReply>(m.body);
    reply.encoding.codec = codec;
    std::vector<Frame> frames = Encode(m);
    auto decoded = Decode(frames);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    const EmbedReply& got = std::get<EmbedReply>(decoded->body);
    EXPECT_EQ(got.encoding.codec, codec);
    auto values = DecodeCompressed(frames[2].bytes(), 9);
    ASSERT_TRUE(values.ok());
    EXPECT_EQ(std::vector<float>(got.embeddings.view().begin(), got.embeddings.view().end()),
              *values);
    for (size_t i = 0; i < 9; ++i) {
      EXPECT_NEAR(got.embeddings.view()[i], SampleWeights()[i], 42.0 / 127 / 2 + 1e-6);
    }
  }
}

// An EmbedRequest's accepts: a fourth field like GetModel's, unknown codecs kept, at most 16.
TEST(CompressedEmbeddings, EmbedRequestAcceptsIsAnOptionalFourthFieldAndBounded) {
  std::vector<Frame> frames = Encode(SampleAcceptingEmbedRequest());
  const std::vector<uint8_t> body(frames[1].bytes().begin(), frames[1].bytes().end());
  EXPECT_EQ(body.front(), 0x94) << "an array of 4 fields";
  EXPECT_EQ(std::vector<uint8_t>(body.end() - 3, body.end()),
            (std::vector<uint8_t>{0x92, 0x01, 0x02}));
  Message m = SampleAcceptingEmbedRequest();
  std::get<EmbedRequest>(m.body).accepts = {static_cast<CompressionCodec>(9)};
  auto decoded = Decode(Encode(m));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, m);
  std::get<EmbedRequest>(m.body).accepts.assign(17, CompressionCodec::kInt8);
  ExpectRejected(Encode(m), ErrorCode::kTooMany, {"EmbedRequest.accepts", "16"});
  // The field is checked before the blob (PROTOCOL.md, "Which code wins"): with a blob one float
  // short too, the code is still too_many.
  std::vector<Frame> both = Encode(m);
  both[2] = Frame::CopyOf(both[2].data(), both[2].size() - 4);
  EXPECT_EQ(DecodeCode(both), ErrorCode::kTooMany);
  // A codec number above 255.
  std::vector<uint8_t> wide = body;
  wide.back() = 0xcd;  // uint16 0x0102 replaces the int8 entry
  wide.push_back(0x01);
  wide.push_back(0x02);
  frames[1] = Frame(wide);
  ExpectRejected(frames, ErrorCode::kMalformed, {"EmbedRequest.accepts"});
}

// A version-2 requester sends no accepts and gets float32 rows: without the fields, EmbedRequest,
// EmbedReply and WitnessRows have exactly their version-2 bytes, and decode as uncompressed.
TEST(CompressedEmbeddings, WithoutTheFieldsEmbedMessagesKeepTheirVersion2Bytes) {
  for (const char* type : {"EmbedRequest", "EmbedReply", "WitnessRows"}) {
    std::vector<Frame> v2 =
        testing::ReadFrames(std::string("tests/protocol/testdata/v2_") + type + ".frames");
    std::vector<Frame> v3 =
        testing::ReadFrames(std::string("tests/protocol/testdata/v3_") + type + ".frames");
    ASSERT_EQ(v2.size(), 3u) << type;
    ASSERT_EQ(v2.size(), v3.size()) << type;
    for (size_t i = 1; i < v2.size(); ++i) EXPECT_EQ(v2[i], v3[i]) << type << " frame " << i;
    auto decoded = Decode(v2);
    ASSERT_TRUE(decoded.ok()) << type << ": " << decoded.status().ToString();
    if (const auto* reply = std::get_if<EmbedReply>(&decoded->body)) {
      EXPECT_EQ(reply->encoding.codec, CompressionCodec::kNone);
      EXPECT_EQ(v2[2].size(), 9u * 4u) << "nine float32 values";
    }
  }
  // Rows a codec cannot encode (a NaN) travel raw, and are refused as before.
  Message m = SampleInt8EmbedReply();
  std::vector<float> rows = testing::SampleInt8Weights();
  rows[4] = std::numeric_limits<float>::quiet_NaN();
  std::get<EmbedReply>(m.body).embeddings = FloatArray::Own(rows);
  std::vector<Frame> frames = Encode(m);
  EXPECT_EQ(frames[1], Encode(SampleMessages()[6])[1]) << "no encoding field";
  ExpectRejected(frames, ErrorCode::kNonFinite, {"EmbedReply.embeddings", "#4"});
}

// PROTOCOL.md, "Compressed embeddings", the receiver's checks: a bad blob is refused with its
// code before any value is used, in EmbedReply and WitnessRows alike.
TEST(CompressedEmbeddings, BadInt8RowsAreRefusedWithTheirCode) {
  for (const Message& sample : {SampleInt8EmbedReply(), SampleInt8WitnessRows()}) {
    const std::string what = std::string(MessageTypeName(sample.envelope.type)) + ".embeddings";
    const std::vector<Frame> frames = Encode(sample);
    std::vector<Frame> bad = frames;
    // A NaN scale.
    std::vector<uint8_t> bytes(frames[2].bytes().begin(), frames[2].bytes().end());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(bytes.data() + 8, &nan, 4);
    bad[2] = Frame(bytes);
    ExpectRejected(bad, ErrorCode::kNonFinite, {what.c_str()});
    // Ten values for rows x cols = 9.
    std::vector<float> ten = testing::SampleInt8Weights();
    ten.push_back(1.0f);
    bad[2] = Frame(*EncodeCompressed(ten, testing::SampleInt8Encoding()));
    ExpectRejected(bad, ErrorCode::kLayoutMismatch, {what.c_str(), "10", "9"});
    // An fp16 blob where int8 is announced.
    CompressionSettings fp16;
    fp16.codec = CompressionCodec::kFp16;
    bad[2] = Frame(*EncodeCompressed(testing::SampleInt8Weights(), fp16));
    ExpectRejected(bad, ErrorCode::kMalformed, {what.c_str(), "fp16", "int8"});
    // A q of -128.
    bytes.assign(frames[2].bytes().begin(), frames[2].bytes().end());
    bytes.back() = 0x80;
    bad[2] = Frame(bytes);
    ExpectRejected(bad, ErrorCode::kMalformed, {what.c_str()});
    // Every truncation of the blob.
    for (size_t len = 0; len < frames[2].size(); ++len) {
      bad[2] = Frame::CopyOf(frames[2].data(), len);
      EXPECT_NE(DecodeCode(bad), ErrorCode::kOk) << what << " blob cut to " << len;
    }
    // Top-k and unknown codecs carry no embeddings.
    for (uint8_t codec : {3, 4, 127}) {
      bad = frames;
      std::vector<uint8_t> body(frames[1].bytes().begin(), frames[1].bytes().end());
      body.back() = codec;
      bad[1] = Frame(body);
      ExpectRejected(bad, ErrorCode::kMalformed, {"encoding", "not a codec of embeddings"});
    }
  }
}

TEST(Hostile, WrongMagicIsRejected) {
  std::vector<Frame> frames = Encode(SampleModel());
  frames[0] = RawEnvelope(0xdeadbeef, kProtocolVersion, kMinProtocolVersion, 9);
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kBadMagic);
}

TEST(Hostile, FutureVersionThatDropsOursIsRejectedWithVersionsInTheMessage) {
  std::vector<Frame> frames = {RawEnvelope(kProtocolMagic, 9, 7, 9), Encode(SampleModel())[1]};
  auto decoded = Decode(frames);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), ErrorCode::kUnsupportedVersion);
  EXPECT_NE(decoded.status().message().find("7..9"), std::string::npos)
      << decoded.status().message();
}

TEST(Hostile, FutureVersionThatStillSpeaksOursIsAccepted) {
  Message ping = MakeMessage("node-x", 1, 0, Ping{5});
  std::vector<Frame> frames = Encode(ping);
  frames[0] = RawEnvelope(kProtocolMagic, kProtocolVersion + 3, kMinProtocolVersion, 9);
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kOk);
}

TEST(Hostile, UnknownTypeIsRejected) {
  std::vector<Frame> frames = Encode(MakeMessage("node-x", 1, 0, Ping{1}));
  frames[0] = RawEnvelope(kProtocolMagic, kProtocolVersion, kMinProtocolVersion, 200);
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kUnknownType);
  frames[0] = RawEnvelope(kProtocolMagic, kProtocolVersion, kMinProtocolVersion, 0);
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kUnknownType);
}

TEST(Hostile, TruncatedFramesAreRejectedAtEveryLength) {
  std::vector<Frame> frames = Encode(SampleModel());
  for (size_t which = 0; which < frames.size(); ++which) {
    for (size_t len = 0; len < frames[which].size(); ++len) {
      std::vector<Frame> cut = frames;
      cut[which] = Frame::CopyOf(frames[which].data(), len);
      EXPECT_NE(DecodeCode(cut), ErrorCode::kOk) << "frame " << which << " cut to " << len;
    }
  }
}

TEST(Hostile, MissingAndExtraFramesAreRejected) {
  std::vector<Frame> frames = Encode(SampleModel());
  EXPECT_EQ(DecodeCode({frames[0], frames[1]}), ErrorCode::kMalformed);
  EXPECT_EQ(DecodeCode({frames[0]}), ErrorCode::kMalformed);
  EXPECT_EQ(DecodeCode({}), ErrorCode::kMalformed);
  std::vector<Frame> extra = frames;
  extra.push_back(frames[2]);
  EXPECT_EQ(DecodeCode(extra), ErrorCode::kMalformed);
  extra.push_back(frames[2]);
  EXPECT_EQ(DecodeCode(extra), ErrorCode::kTooMany);
}

TEST(Hostile, OversizeMessageIsRejectedBeforeParsing) {
  DecodeOptions options;
  options.limits.max_message_bytes = 64;
  auto decoded = Decode(Encode(SampleModel()), options);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), ErrorCode::kTooLarge);
  EXPECT_NE(decoded.status().message().find("max_message_bytes"), std::string::npos);
}

TEST(Hostile, WrongBlobLengthIsRejected) {
  std::vector<Frame> frames = Encode(SampleModel());
  std::vector<float> longer = SampleWeights();
  longer.push_back(1.0f);
  frames[2] = BlobOf(FloatArray::Own(longer));
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kLayoutMismatch);
  frames[2] = Frame::CopyOf(frames[2].data(), 7);  // not a whole float
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kLayoutMismatch);
}

TEST(Hostile, NanAndInfWeightsAreRejectedWithTheirIndex) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    Message m = SampleModel();
    std::vector<float> w = SampleWeights();
    w[5] = bad;
    std::get<Model>(m.body).weights = FloatArray::Own(w);
    auto decoded = Decode(Encode(m));
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), ErrorCode::kNonFinite);
    EXPECT_NE(decoded.status().message().find("#5"), std::string::npos);
  }
}

TEST(Hostile, LayoutDifferentFromTheLocalModelIsRejected) {
  ParamLayout local = MakeContiguousLayout({{"fc.weight", {3, 2}}, {"fc.bias", {3}}});
  DecodeOptions options;
  options.expected_layout = &local;
  auto decoded = Decode(Encode(SampleModel()), options);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), ErrorCode::kLayoutMismatch);
  EXPECT_NE(decoded.status().message().find("fc.weight"), std::string::npos);
  ParamLayout same = SampleLayout();
  options.expected_layout = &same;
  EXPECT_TRUE(Decode(Encode(SampleModel()), options).ok());
}

TEST(Hostile, OverlappingLayoutIsRejected) {
  Message m = SampleModel();
  std::get<Model>(m.body).layout.tensors[1].offset = 2;
  EXPECT_EQ(DecodeCode(Encode(m)), ErrorCode::kLayoutMismatch);
}

// Found while writing the decode fuzzer's blob check (tests/protocol/fuzz/decode_fuzzer.cc,
// contract 5, which flags these inputs): element counts wrapped around 2^64, so a Model whose
// layout claims 2^80 floats (the count wraps to 0) or 2^62 floats (the byte count wraps to 0) was
// accepted with an empty weights blob.
TEST(Hostile, LayoutWhoseSizeWrapsAroundIsRejected) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{1ll << 40, 1ll << 40}, std::vector<int64_t>{1ll << 40, 1ll << 22}}) {
    Message m = SampleModel();
    std::get<Model>(m.body).layout = MakeContiguousLayout({{"w", shape}});
    std::get<Model>(m.body).weights = FloatArray::Own({});
    auto decoded = Decode(Encode(m));
    ASSERT_FALSE(decoded.ok()) << "shape [" << shape[0] << "," << shape[1] << "] accepted";
    EXPECT_EQ(decoded.status().code(), ErrorCode::kLayoutMismatch);
  }
}

TEST(Hostile, TooManyPeersAreRejected) {
  PeerList list;
  for (int i = 0; i < 20; ++i) list.peers.push_back({"n" + std::to_string(i), "tcp://x", ""});
  DecodeOptions options;
  options.limits.max_peers = 10;
  EXPECT_EQ(DecodeCode(Encode(MakeMessage("a", 1, 0, list)), options), ErrorCode::kTooMany);
}

// PROTOCOL.md, "Limits": a string above max_string_bytes is too_large, wherever it is.
// PROTOCOL.md, "Limits": rows, columns and max_samples above 4096 are counts above their limit.
TEST(Hostile, EmbeddingCountsAboveTheirLimitsAreTooMany) {
  EmbedReply reply;
  reply.rows = 5000;
  reply.cols = 1;
  reply.embeddings = FloatArray::Own(std::vector<float>(5000, 1.f));
  EXPECT_EQ(DecodeCode(Encode(MakeMessage("a", 1, 0, reply))), ErrorCode::kTooMany);
  Message embed = SampleMessages()[5];
  std::get<EmbedRequest>(embed.body).max_samples = 5000;
  EXPECT_EQ(DecodeCode(Encode(embed)), ErrorCode::kTooMany);
}

TEST(Hostile, OverlongStringIsTooLarge) {
  Message m = MakeMessage(std::string(5000, 'x'), 1, 0, Ping{1});
  EXPECT_EQ(DecodeCode(Encode(m)), ErrorCode::kTooLarge);
  Message error = MakeMessage("node-0", 1, 0, Error{ErrorCode::kRefused, std::string(2000, 'e')});
  EXPECT_EQ(DecodeCode(Encode(error)), ErrorCode::kTooLarge);
}

// PROTOCOL.md, "Encoding rules": structs are arrays, never maps; a map is malformed, not a count.
TEST(Hostile, MapWhereAnArrayBelongsIsMalformed) {
  std::vector<Frame> frames = Encode(MakeMessage("a", 1, 0, Ping{1}));
  const uint8_t map_body[] = {0x81, 0x01, 0x02};  // {1: 2}
  frames[1] = Frame::CopyOf(map_body, sizeof(map_body));
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kMalformed);
  const uint8_t bin_body[] = {0x91, 0xc4, 0x01, 0x00};  // [bin "\0"]
  frames[1] = Frame::CopyOf(bin_body, sizeof(bin_body));
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kMalformed);
}

// An envelope frame with `sender` as its sender, otherwise a Ping's.
Frame EnvelopeWithSender(const std::string& sender) {
  Message m = MakeMessage("x", 5, 0, Ping{1});
  m.envelope.sender = sender;
  return Encode(m)[0];
}

TEST(Hostile, StringsMustBeUtf8) {
  const std::string bad[] = {"\xff", "a\xc3", "\xc0\xaf" /* overlong '/' */,
                             "\xed\xa0\x80" /* surrogate */, "\xf4\x90\x80\x80" /* > U+10FFFF */};
  for (const std::string& text : bad) {
    Message error = MakeMessage("node-0", 1, 0, Error{ErrorCode::kRefused, text});
    EXPECT_EQ(DecodeCode(Encode(error)), ErrorCode::kMalformed);
    Message hello = SampleMessages()[0];
    std::get<Hello>(hello.body).listen_endpoint = "tcp://" + text;
    EXPECT_EQ(DecodeCode(Encode(hello)), ErrorCode::kMalformed);
  }
  Message fine = MakeMessage(
      "node-0", 1, 0, Error{ErrorCode::kRefused, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"});
  EXPECT_EQ(DecodeCode(Encode(fine)), ErrorCode::kOk);
}

// PROTOCOL.md, "Node ids": the sender and every id field follow the id rule (invalid_argument).
TEST(Hostile, NodeIdsOutsideTheAlphabetAreInvalidArguments) {
  const std::string bad[] = {
      "", "-lead", ".", "a b", "a/b", "a\nb", "caf\xc3\xa9", "\xff", std::string(65, 'a')};
  for (const std::string& id : bad) {
    std::vector<Frame> frames = Encode(MakeMessage("a", 1, 0, Ping{1}));
    frames[0] = EnvelopeWithSender(id);
    EXPECT_EQ(DecodeCode(frames), ErrorCode::kInvalidArgument) << "sender '" << id << "'";
    PeerList list{{{id, "tcp://127.0.0.1:1", ""}}};
    EXPECT_EQ(DecodeCode(Encode(MakeMessage("a", 1, 0, list))), ErrorCode::kInvalidArgument)
        << "PeerList id '" << id << "'";
    Message model = SampleModel();
    std::get<Model>(model.body).score_row = {{id, 0.5}};
    EXPECT_EQ(DecodeCode(Encode(model)), ErrorCode::kInvalidArgument) << "score row '" << id << "'";
    EmdDecision decision{true, 0.5, 0.25, std::vector<std::string>{"node-1", id}};
    EXPECT_EQ(DecodeCode(Encode(MakeMessage("a", 1, 0, decision))), ErrorCode::kInvalidArgument)
        << "EmdDecision accepts '" << id << "'";
  }
  for (const std::string& id :
       {std::string("a"), std::string("node-0"), std::string("Rank_17.b"), std::string(64, '9')}) {
    std::vector<Frame> frames = Encode(MakeMessage("a", 1, 0, Ping{1}));
    frames[0] = EnvelopeWithSender(id);
    EXPECT_EQ(DecodeCode(frames), ErrorCode::kOk) << "sender '" << id << "'";
  }
}

// An error names the field at fault down to the list element, so that a peer's bad message can be
// found in its sender's code.
TEST(Hostile, ErrorsNameTheListElementAtFault) {
  auto message_of = [](const std::vector<Frame>& frames) {
    Result<Message> decoded = Decode(frames);
    return decoded.ok() ? std::string("decoded") : decoded.status().message();
  };
  Message model = SampleModel();
  std::get<Model>(model.body).score_row = {{"node-1", 0.5}, {"bad id", 0.25}};
  EXPECT_NE(message_of(Encode(model)).find("Model.score_row[1].peer"), std::string::npos)
      << message_of(Encode(model));
  PeerList list{{{"node-1", "tcp://127.0.0.1:1", ""}, {"node-2", "tcp://\xff", ""}}};
  std::string peers = message_of(Encode(MakeMessage("a", 1, 0, list)));
  EXPECT_NE(peers.find("PeerList.peers[1].endpoint"), std::string::npos) << peers;
  Message witness = SampleMessages()[0];
  for (const Message& m : SampleMessages()) {
    if (std::holds_alternative<WitnessEmbedRequest>(m.body)) witness = m;
  }
  ASSERT_TRUE(std::holds_alternative<WitnessEmbedRequest>(witness.body));
  std::get<WitnessEmbedRequest>(witness.body).witness.id = "bad id";
  std::string named = message_of(Encode(witness));
  EXPECT_NE(named.find("WitnessEmbedRequest.witness.id"), std::string::npos) << named;
}

// PROTOCOL.md, "Envelope": an Error for bad magic, version or type carries the request id.
TEST(Hostile, AddressOfAWellFormedEnvelopeHasItsRequestIdWhateverItsValues) {
  Frame bad_magic = RawEnvelope(0xdeadbeef, kProtocolVersion, kMinProtocolVersion, 9);
  Frame bad_version = RawEnvelope(kProtocolMagic, 9, 7, 9);
  Frame bad_type = RawEnvelope(kProtocolMagic, kProtocolVersion, kMinProtocolVersion, 200);
  for (const Frame& frame : {bad_magic, bad_version, bad_type}) {
    EXPECT_FALSE(DecodeEnvelope(frame).ok());
    EnvelopeAddress address = AddressOf(frame);
    EXPECT_EQ(address.request_id, 1u);
    EXPECT_EQ(address.sender, "node-x");
  }
  EnvelopeAddress bad_sender = AddressOf(EnvelopeWithSender("a b"));
  EXPECT_EQ(bad_sender.request_id, 5u);
  EXPECT_EQ(bad_sender.sender, "") << "a sender that is not a node id is not repeated";
  // A sender above max_string_bytes makes the envelope too_large, yet the Error repeats its id.
  Frame long_sender = EnvelopeWithSender(std::string(Limits{}.max_string_bytes + 1, 'x'));
  EXPECT_EQ(DecodeEnvelope(long_sender).status().code(), ErrorCode::kTooLarge);
  EXPECT_EQ(AddressOf(long_sender).request_id, 5u);
  EXPECT_EQ(AddressOf(long_sender).sender, "");
  const uint8_t garbage[] = {0x92, 0x01, 0x02};
  EXPECT_EQ(AddressOf(Frame::CopyOf(garbage, sizeof(garbage))).request_id, 0u);
}

TEST(Hostile, TrailingBytesInAFrameAreRejected) {
  std::vector<Frame> frames = Encode(MakeMessage("a", 1, 0, Ping{1}));
  std::vector<uint8_t> body(frames[1].bytes().begin(), frames[1].bytes().end());
  body.push_back(0x01);
  frames[1] = Frame(std::move(body));
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kMalformed);
}

// A seeded loop of random and mutated messages: every decode returns an error or a message that
// re-encodes and decodes again, and nothing crashes (also run under ASan/UBSan by the CI).
TEST(Hostile, HundredThousandRandomAndMutatedMessagesNeverCrash) {
  std::mt19937_64 rng(20261122);
  std::vector<std::vector<Frame>> seeds;
  for (const Message& m : SampleMessages()) seeds.push_back(Encode(m));
  size_t accepted = 0;
  for (int iteration = 0; iteration < 100000; ++iteration) {
    std::vector<Frame> frames;
    if (iteration % 4 == 0) {
      size_t count = rng() % 5;
      for (size_t f = 0; f < count; ++f) {
        std::vector<uint8_t> bytes(rng() % 64);
        for (auto& b : bytes) b = static_cast<uint8_t>(rng());
        frames.emplace_back(std::move(bytes));
      }
    } else {
      frames = seeds[rng() % seeds.size()];
      size_t which = rng() % frames.size();
      std::vector<uint8_t> bytes(frames[which].bytes().begin(), frames[which].bytes().end());
      int mutations = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < mutations; ++k) {
        switch (rng() % 4) {
          case 0:  // flip a byte
            if (!bytes.empty()) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
            break;
          case 1:  // truncate
            if (!bytes.empty()) bytes.resize(rng() % bytes.size());
            break;
          case 2:  // insert a byte
            bytes.insert(bytes.begin() + static_cast<long>(rng() % (bytes.size() + 1)),
                         static_cast<uint8_t>(rng()));
            break;
          default:  // interesting msgpack markers: huge array/str/bin headers
            if (!bytes.empty()) {
              static const uint8_t kMarkers[] = {0xdd, 0xdc, 0xdb, 0xc6, 0xcf, 0xd3, 0xc1, 0xff};
              bytes[rng() % bytes.size()] = kMarkers[rng() % sizeof(kMarkers)];
            }
        }
      }
      frames[which] = Frame(std::move(bytes));
    }
    auto decoded = Decode(frames);
    if (decoded.ok()) {
      ++accepted;
      auto again = Decode(Encode(*decoded));
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(*again, *decoded);
    } else {
      EXPECT_FALSE(decoded.status().message().empty());
    }
  }
  // Some mutations (e.g. a changed float) leave a valid message; most must not.
  EXPECT_LT(accepted, 50000u);
}

}  // namespace
}  // namespace meshlearn
