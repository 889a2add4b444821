// The points PROTOCOL.md settles for a client written from it alone (issue 44, item 5), one test
// per decision that the codec decides; tests/protocol/conformance.py checks the same points, and
// those a node decides, against a real node.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/little_endian.h"
#include "protocol/codec.h"
#include "protocol/compression.h"
#include "protocol/version.h"
#include "tests/protocol/sample_messages.h"

namespace meshlearn {
namespace {

ErrorCode DecodeCode(const std::vector<Frame>& frames) {
  auto decoded = Decode(frames);
  return decoded.ok() ? ErrorCode::kOk : decoded.status().code();
}

// `frame` with the msgpack str "@@" replaced by the two bytes ff fe, which are not UTF-8.
Frame WithNonUtf8(const Frame& frame) {
  std::vector<uint8_t> bytes(frame.bytes().begin(), frame.bytes().end());
  const uint8_t placeholder[] = {0xa2, '@', '@'};
  auto at = std::search(bytes.begin(), bytes.end(), std::begin(placeholder), std::end(placeholder));
  EXPECT_NE(at, bytes.end());
  at[1] = 0xff;
  at[2] = 0xfe;
  return Frame(std::move(bytes));
}

// A GetModel body whose accepts field (field 3) is the msgpack bytes `accepts`.
std::vector<Frame> GetModelWithAccepts(std::vector<uint8_t> accepts) {
  std::vector<Frame> frames = Encode(MakeMessage("node-0", 1, 0, GetModel{12, true}));
  std::vector<uint8_t> body = {0x94, 0x0c, 0xc3, 0xc2};  // [12, true, false, <accepts>]
  body.insert(body.end(), accepts.begin(), accepts.end());
  frames[1] = Frame(std::move(body));
  return frames;
}

// "Node ids": a node-id field is judged by the id rule alone, so an id that is not UTF-8 is
// invalid_argument (not malformed), in the envelope and in a PeerInfo.
TEST(SettledPoints, ANonUtf8NodeIdIsAnInvalidArgument) {
  std::vector<Frame> frames = Encode(MakeMessage("@@", 1, 0, Ping{1}));
  frames[0] = WithNonUtf8(frames[0]);
  EXPECT_EQ(DecodeCode(frames), ErrorCode::kInvalidArgument) << "the envelope's sender";
  std::vector<Frame> list =
      Encode(MakeMessage("node-0", 1, 0, PeerList{{{"@@", "tcp://127.0.0.1:1", ""}}}));
  list[1] = WithNonUtf8(list[1]);
  EXPECT_EQ(DecodeCode(list), ErrorCode::kInvalidArgument) << "PeerInfo.id";
  std::vector<Frame> text = Encode(MakeMessage("node-0", 1, 0, Goodbye{"@@"}));
  text[1] = WithNonUtf8(text[1]);
  EXPECT_EQ(DecodeCode(text), ErrorCode::kMalformed) << "any other string stays malformed";
}

// "GetModel.accepts" and "A field or type newer than its envelope": accepts is read whatever the
// envelope's version, and an entry 0 is kept like any number (the responder ignores it).
TEST(SettledPoints, AcceptsIsReadInAnyEnvelopeAndMayHoldZero) {
  GetModel get{12, true};
  get.accepts = {CompressionCodec::kNone, CompressionCodec::kInt8};
  for (uint16_t version : {uint16_t{1}, uint16_t{2}, kProtocolVersion}) {
    Message message = MakeMessage("node-0", 1, 0, get);
    message.envelope.protocol_version = version;
    auto decoded = Decode(Encode(message));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(std::get<GetModel>(decoded->body).accepts, get.accepts) << "version " << version;
  }
}

// "A list's count before its entries": the array cap from the header alone, then a frame that
// holds every entry, then the list's own limit, then the entries.
TEST(SettledPoints, AListIsJudgedByItsCountBeforeItsEntries) {
  EXPECT_EQ(DecodeCode(GetModelWithAccepts({0xdd, 0xff, 0xff, 0xff, 0xff})), ErrorCode::kTooMany)
      << "a header claiming 2^32 - 1 entries, none following";
  EXPECT_EQ(DecodeCode(GetModelWithAccepts({0xdc, 0x00, 0x64, 0x01, 0x02})), ErrorCode::kMalformed)
      << "a header claiming 100 entries (below the cap), 2 following";
  std::vector<uint8_t> seventeen = {0xdc, 0x00, 0x11};
  for (int i = 0; i < 16; ++i) seventeen.push_back(0x01);
  seventeen.insert(seventeen.end(), {0xcd, 0x01, 0x2c});  // 300, above 255
  EXPECT_EQ(DecodeCode(GetModelWithAccepts(seventeen)), ErrorCode::kTooMany)
      << "17 entries, the last out of range: the count wins";
  std::vector<uint8_t> sixteen = {0xdc, 0x00, 0x10};
  for (int i = 0; i < 15; ++i) sixteen.push_back(0x01);
  sixteen.insert(sixteen.end(), {0xcd, 0x01, 0x2c});
  EXPECT_EQ(DecodeCode(GetModelWithAccepts(sixteen)), ErrorCode::kMalformed)
      << "16 entries, the last out of range: the entry's rule";
}

// "Limits": EmdDecision.accepts holds at most max_peers ids.
TEST(SettledPoints, EmdDecisionAcceptsHoldsAtMostMaxPeersIds) {
  std::vector<std::string> ids;
  for (uint32_t i = 0; i < Limits{}.max_peers; ++i) ids.push_back("n" + std::to_string(i));
  EmdDecision decision{true, 0.5, 0.25, ids};
  EXPECT_EQ(DecodeCode(Encode(MakeMessage("node-0", 1, 0, decision))), ErrorCode::kOk);
  decision.accepts->push_back("one-more");
  EXPECT_EQ(DecodeCode(Encode(MakeMessage("node-0", 1, 0, decision))), ErrorCode::kTooMany);
}

// "Compressed models": the update frame of a top-k Model is an int8 blob in the owner's block
// size, which the receiver reads from the blob.
TEST(SettledPoints, ATopKModelsUpdateIsInt8InTheOwnersBlockSize) {
  Message message = testing::SampleMessages()[4];
  Model& model = std::get<Model>(message.body);
  model.weights = FloatArray();
  model.update = FloatArray::Own(testing::SampleUpdate());
  model.encoding.codec = CompressionCodec::kTopK;
  model.encoding.block_size = 96;
  model.chain = testing::SampleChain();
  std::vector<Frame> frames = Encode(message);
  ASSERT_EQ(frames.size(), 4u);
  auto header = ReadCompressedHeader(frames[3].bytes());
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(header->codec, CompressionCodec::kInt8);
  EXPECT_EQ(header->block_size, 96u);
  auto decoded = Decode(frames);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<Model>(decoded->body).encoding.block_size, 96u);
}

// "Compressed blob encodings": k = round(f * n) rounds halves away from zero.
TEST(SettledPoints, TopKRoundsHalvesAwayFromZero) {
  EXPECT_EQ(TopKCount(10, 0.25), 3u) << "2.5 keeps 3";
  EXPECT_EQ(TopKCount(6, 0.25), 2u) << "1.5 keeps 2";
  EXPECT_EQ(TopKCount(12730, 0.05), 637u) << "636.5 keeps 637";
}

// "Compressed blob encodings", step 5: 127 * s is computed in float32, so a scale whose product
// overflows float32 (but not double) is non_finite.
TEST(SettledPoints, AnInt8ScaleIsCheckedWithAFloat32Product) {
  // int8, block 64, n = 1: one scale, one value.
  auto blob_with_scale = [](float scale) {
    std::vector<uint8_t> blob = {2, 0, 64, 0, 1, 0, 0, 0};
    AppendLittleEndian(blob, scale);
    blob.push_back(1);
    return blob;
  };
  // FLT_MAX / 127 is about 2.68e36.
  EXPECT_TRUE(DecodeCompressed(blob_with_scale(2.6e36f), 1).ok()) << "127 s = 3.30e38, finite";
  const float above = 2.7e36f;
  ASSERT_TRUE(std::isfinite(127.0 * static_cast<double>(above))) << "finite in double";
  auto decoded = DecodeCompressed(blob_with_scale(above), 1);
  ASSERT_FALSE(decoded.ok()) << "127 s = 3.43e38 overflows float32";
  EXPECT_EQ(decoded.status().code(), ErrorCode::kNonFinite);
  EXPECT_TRUE(DecodeCompressed(blob_with_scale(-0.0f), 1).ok()) << "-0 is a scale >= 0";
}

}  // namespace
}  // namespace meshlearn
