#pragma once
// Every message of the meshlearn wire protocol, in one place. The byte-level format of each field
// is specified in protocol/PROTOCOL.md; the codec in protocol/codec.h turns these structs into
// frames and back.
//
// Type numbers are append-only and frozen: a new message gets the next number, a retired one
// stays here as a comment so its number is never reused.
//
// One description per struct. Every struct that travels (the envelope, each message body, and the
// structs nested in them) describes its wire form once, in a static `Describe(fields, m)` beside
// its members: its fields in wire order, the kind of each (which fixes its msgpack type, its
// limit and its error), and its blob frames. The codec runs that description with one `fields`
// object per job: FieldWriter writes the body array, BlobEncoder the blob frames, FieldReader
// reads and checks both with the protocol's errors, and BlobSlots counts the frames a type
// carries (protocol/field_writer.h, protocol/field_reader.h). A field added to a description is
// therefore written, read, checked and counted, or it is nowhere; tests/protocol/
// protocol_doc_test.cc renders every description and compares it with PROTOCOL.md's tables.
// A `fields` object offers one call per kind of field:
//   Uint(name, u, max)        an integer in [0, max] (malformed otherwise); also an enum's number
//   Count(name, u, limit)     a uint32 count: too_many above the Limits member `limit`
//   Int(name, i)              a signed 64-bit integer
//   Bool(name, b)             true or false
//   Float64(name, d)          a finite number (non_finite for NaN or Inf), written as float64
//   String(name, s)           UTF-8 of at most max_string_bytes
//   AnyString(name, s)        bytes of at most max_string_bytes, judged by the caller
//   NodeId(name, s)           a node id (protocol/wire_text.h; invalid_argument otherwise)
//   NodeIds(name, o, limit)   an array of node ids, at most the Limits member `limit`
//   Codecs(name, v)           an array of codec numbers (uint8, unknown ones kept), at most
//                             kMaxAcceptedCodecs
//   Struct(name, s)           a nested struct, by its own Describe; std::optional: may be absent
//   List(name, v, limit)      an array of nested structs, at most the Limits member `limit`
//   Layout(name, l)           a Layout, each tensor by DescribeTensor: valid
//   (ParamLayout::Validate)
//                             and equal to the decoder's expected layout when it has one
//   Dims(name, v)             a tensor shape: at most max_tensor_rank integers in [0, 2^40]
//   Optional()                the fields after it are optional trailing fields (PROTOCOL.md,
//                             "Encoding rules"): each written when set (true, not empty, present)
//                             or when a later one is, and read as unset when the array ends first
//   Present(name, o)          a bool: whether the optional values `o` travel (a blob frame, or
//                             a chain's base)
//   Encoding(name, e, what)   the codec of the blob frames that follow (uint8, one of the codecs of
//                             `what`; absent or 0: raw float32), written only when the encoder
//                             could compress them
//   Chain(name, c)            a top-k Model's chain (EstimateChain::Describe), written and read
//                             only with encoding topk; its frame then replaces the first blob and
//                             the other blobs travel as int8
//   Blob(name, a, count)      a blob frame of `count` values (an std::optional one: present when
//                             its Present flag is true)

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/param_layout.h"
#include "base/status.h"
#include "protocol/compression.h"
#include "protocol/frame.h"
#include "protocol/limits.h"

namespace meshlearn {

// The type number carried in every envelope.
enum class MessageType : uint16_t {
  kHello = 1,
  kHelloAck = 2,
  kPeerList = 3,
  kGetModel = 4,
  kModel = 5,
  kEmbedRequest = 6,
  kEmbedReply = 7,
  kEmdDecision = 8,
  kPing = 9,
  kPong = 10,
  kError = 11,
  kWitnessEmbedRequest = 12,
  kWitnessRows = 13,
  kWitnessResult = 14,
  kGetSignature = 15,
  kSignature = 16,
  kGoodbye = 17,  // since version 2 (kGoodbyeVersion)
};

// Returns the name of `type` ("GetModel"), or "unknown".
const char* MessageTypeName(MessageType type);

// What the blob frames after an Encoding field hold, which decides the codecs they may travel in:
// a model's (ModelCodecs() of protocol/codec.h) or projected embeddings (EmbeddingCodecs()).
enum class BlobContents : uint8_t { kModel, kEmbeddings };

// The fields of one tensor of a Layout (PROTOCOL.md, "TensorSpec"), for the Layout kind of field.
template <class Fields, class Tensor>
void DescribeTensor(Fields& f, Tensor& t) {
  f.String("name", t.name);
  f.Dims("shape", t.shape);
  f.Uint("offset", t.offset, kMaxLayoutValue);
}

// Frame 0 of every message: who sent it, what it is, and which request it belongs to.
struct Envelope {
  uint32_t magic = 0;                     // must equal kProtocolMagic
  uint16_t protocol_version = 0;          // the sender's kProtocolVersion
  uint16_t min_version = 0;               // the oldest version the sender can talk to
  MessageType type = MessageType::kPing;  // selects the body struct
  std::string sender;                     // the sender's node id
  uint64_t request_id = 0;                // a reply repeats its request's id
  int64_t round = 0;                      // the sender's current round
  bool operator==(const Envelope&) const = default;
  // The fields. The values are judged after the array is read (protocol/codec.h, DecodeEnvelope),
  // so that a refusal can still name the request id.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& e) {
    f.Uint("magic", e.magic, UINT32_MAX);
    f.Uint("protocol_version", e.protocol_version, UINT16_MAX);
    f.Uint("min_version", e.min_version, UINT16_MAX);
    f.Uint("type", e.type, UINT16_MAX);
    f.AnyString("sender", e.sender);
    f.Uint("request_id", e.request_id, UINT64_MAX);
    f.Int("round", e.round);
  }
};

// A node introducing itself to a peer (request) and its answer (HelloAck, same fields).
// A peer with a different architecture_id cannot exchange models and is refused.
struct Hello {
  static constexpr MessageType kType = MessageType::kHello;
  std::string listen_endpoint;  // where the sender accepts requests, e.g. "tcp://127.0.0.2:5555"
  std::string architecture_id;  // the model architecture, e.g. "cnn/10" (name and output size)
  std::string metric;           // the similarity metric the sender uses, e.g. "cos_weights"
  std::string public_key;       // the sender's CURVE public key in Z85 (40 chars), or empty
  uint64_t nonce = 0;           // random per process start; seeds shared projections (EMD)
  bool operator==(const Hello&) const = default;
  // The fields (HelloAck's too).
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.String("listen_endpoint", m.listen_endpoint);
    f.String("architecture_id", m.architecture_id);
    f.String("metric", m.metric);
    f.String("public_key", m.public_key);
    f.Uint("nonce", m.nonce, UINT64_MAX);
  }
};

// The answer to Hello: the responder's own identity.
struct HelloAck : Hello {
  static constexpr MessageType kType = MessageType::kHelloAck;
  bool operator==(const HelloAck&) const = default;
};

// One member of the mesh as gossiped in a PeerList.
struct PeerInfo {
  std::string id;          // node id
  std::string endpoint;    // its listen endpoint
  std::string public_key;  // Z85 CURVE public key or empty
  bool operator==(const PeerInfo&) const = default;
  // The fields. Rationale: the endpoint and key are not checked beyond UTF-8; a list is gossip
  // the sender relays (PROTOCOL.md, "A PeerList member the node cannot use").
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& p) {
    f.NodeId("id", p.id);
    f.String("endpoint", p.endpoint);
    f.String("public_key", p.public_key);
  }
};

// Membership gossip: the peers the sender knows (alive ones).
struct PeerList {
  static constexpr MessageType kType = MessageType::kPeerList;
  std::vector<PeerInfo> peers;
  bool operator==(const PeerList&) const = default;
  // The fields.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.List("peers", m.peers, &Limits::max_peers);
  }
};

// The public estimate x̂ of a responder's model that a requester holds (top-k, PROTOCOL.md "Top-k
// update chains"): the lineage and the round of the last update applied.
struct HeldEstimate {
  // The round the responder's estimate started from; -1: the shared initial model, before round 0.
  int64_t start_round = -1;
  // The snapshot round whose update was applied last; start_round when none was.
  int64_t round = -1;
  bool operator==(const HeldEstimate&) const = default;
  // The fields.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& h) {
    f.Int("start_round", h.start_round);
    f.Int("round", h.round);
  }
};

// A request for the responder's published model snapshot.
struct GetModel {
  static constexpr MessageType kType = MessageType::kGetModel;
  int64_t min_round = 0;  // the oldest snapshot round the requester accepts
  bool wait = false;      // true (synchronous mode): hold the request until such a snapshot exists
  // Optional field 2: ask for the owner's last local update too (Model.update). Sent only when
  // true, so a GetModel without it has the same bytes as before the field existed.
  bool with_update = false;
  // Optional field 3 (since version 3, kCompressedModelVersion): the codecs other than none that
  // the requester decodes a Model's blobs from; the responder may answer in one of them
  // (Model.encoding). Sent only when not empty (with_update is then written too), so a GetModel
  // without it has the same bytes as before the field existed. Unknown codec numbers are kept.
  std::vector<CompressionCodec> accepts = {};
  // Optional field 4 (since version 3): the estimate of the responder's model the requester holds,
  // for a top-k reply (Model.chain). Written only when set; fields 2 and 3 are then written too.
  // A responder answers in top-k only to a GetModel that lists kTopK in accepts and sets this.
  std::optional<HeldEstimate> estimate = std::nullopt;
  bool operator==(const GetModel&) const = default;
  // The fields.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Int("min_round", m.min_round);
    f.Bool("wait", m.wait);
    f.Optional();
    f.Bool("with_update", m.with_update);
    f.Codecs("accepts", m.accepts);
    f.Struct("estimate", m.estimate);
  }
};

// A similarity score of one peer, as carried in score rows (for the DAC two-hop update).
struct PeerScore {
  std::string peer;
  double score = 0;
  bool operator==(const PeerScore&) const = default;
  // The fields.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& s) {
    f.NodeId("peer", s.peer);
    f.Float64("score", s.score);
  }
};

// A top-k reply's chain (Model field 7 and blob frame 2; PROTOCOL.md "Top-k update chains"): what
// turns the requester's estimate of the owner's model into the owner's estimate at `to_round`.
struct EstimateChain {
  int64_t start_round = -1;  // the owner's estimate lineage (HeldEstimate::start_round)
  // The estimate's round the updates apply to: the requester's held round, or base's round.
  int64_t from_round = -1;
  int64_t to_round = -1;  // the estimate's round after the last update
  // CRC-32 of x̂'s float32 bytes at to_round (EstimateChecksum): the requester checks its result.
  uint32_t checksum = 0;
  // The estimate at from_round whole, when the requester's copy cannot be used (another lineage,
  // or older than the owner keeps updates for); decoded values, checked finite.
  std::optional<FloatArray> base;
  // The top-k update blobs of the rounds after from_round, oldest first; each checked when
  // applied (PublicEstimate::Apply), their headers and counts when decoded.
  std::vector<std::vector<uint8_t>> updates;
  bool operator==(const EstimateChain&) const = default;
  // The fields of Model field 7; the base and the updates travel in the chain frame.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& c) {
    f.Int("start_round", c.start_round);
    f.Int("from_round", c.from_round);
    f.Int("to_round", c.to_round);
    f.Uint("checksum", c.checksum, UINT32_MAX);
    f.Present("has_base", c.base);
  }
};

// A published model snapshot. The weights travel as one blob frame.
struct Model {
  static constexpr MessageType kType = MessageType::kModel;
  int64_t round = 0;                 // the round that produced this snapshot
  uint64_t train_size = 0;           // the owner's number of training samples (FedAvg weight)
  bool early_stopped = false;        // the owner stopped training; this is its best model
  ParamLayout layout;                // describes `weights`
  std::vector<PeerScore> score_row;  // the owner's current similarity scores of its peers
  FloatArray weights;                // blob frame 2: layout.total_floats() float32 values
  // Optional field 5 (true) and blob frame 3: the owner's last local update, the weights after
  // its local training minus the weights it trained from (after that round's merge), in `layout`.
  // Sent only to a GetModel with with_update, by an owner that has one; absent otherwise, and then
  // the message has the same bytes as before the field existed.
  std::optional<FloatArray> update;
  // Optional field 6 (since version 3, kCompressedModelVersion): how `weights` and `update` travel.
  // The codec is kNone (raw float32 blobs, the field unwritten: the same bytes as before it
  // existed), or kFp16, kInt8 or kTopK, which only a GetModel accepting it gets: each blob frame
  // then holds that codec's compressed bytes (protocol/compression.h), and the encoder uses
  // block_size; with kTopK, `chain` replaces the weights and the update travels as int8.
  // A decoded Model holds the decoded floats, the codec and, for int8, the blobs' block size; the
  // other settings keep their defaults.
  CompressionSettings encoding = {};
  // Field 7 and blob frame 2 when encoding.codec is kTopK: the chain that rebuilds the owner's
  // public estimate, which replaces `weights` (left empty); the update then travels as int8.
  std::optional<EstimateChain> chain;
  bool operator==(const Model&) const = default;
  // The fields and blob frames.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Int("round", m.round);
    f.Uint("train_size", m.train_size, UINT64_MAX);
    f.Bool("early_stopped", m.early_stopped);
    f.Layout("layout", m.layout);
    f.List("score_row", m.score_row, &Limits::max_score_entries);
    f.Optional();
    f.Present("update", m.update);
    f.Encoding("encoding", m.encoding, BlobContents::kModel);
    f.Chain("chain", m.chain);
    f.Blob("weights", m.weights, m.layout.total_floats());
    f.Blob("update", m.update, m.layout.total_floats());
  }
};

// A request to embed the responder's validation samples with the requester's model (EMD).
struct EmbedRequest {
  static constexpr MessageType kType = MessageType::kEmbedRequest;
  uint64_t projection_seed = 0;  // seeds the shared random projection R
  uint32_t max_samples = 512;    // at most this many validation samples are embedded
  ParamLayout layout;            // describes `weights`
  FloatArray weights;            // blob frame 2: the requester's model
  // Optional field 3 (since version 3, kCompressedEmbeddingVersion): the codecs other than none
  // that the requester decodes an EmbedReply's blob from; the responder may answer in one of them
  // (EmbedReply.encoding). Sent only when not empty, so an EmbedRequest without it has the same
  // bytes as before the field existed. Unknown codec numbers are kept.
  std::vector<CompressionCodec> accepts = {};
  bool operator==(const EmbedRequest&) const = default;
  // The fields and blob frame. Rationale: the weights travel float32 always, so that the
  // responder embeds with exactly the requester's model.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Uint("projection_seed", m.projection_seed, UINT64_MAX);
    f.Count("max_samples", m.max_samples, &Limits::max_embed_rows);
    f.Layout("layout", m.layout);
    f.Optional();
    f.Codecs("accepts", m.accepts);
    f.Blob("weights", m.weights, m.layout.total_floats());
  }
};

// Projected embeddings, row-major rows × cols, in one blob frame. Never raw samples.
struct EmbedReply {
  static constexpr MessageType kType = MessageType::kEmbedReply;
  uint32_t rows = 0;
  uint32_t cols = 0;
  FloatArray embeddings;  // blob frame 2: rows * cols values
  // Optional field 2 (since version 3, kCompressedEmbeddingVersion): how `embeddings` travels.
  // The codec is kNone (raw float32, the field unwritten: the same bytes as before it existed),
  // or kFp16 or kInt8 (EmbeddingCodecs()), which only an EmbedRequest accepting it gets: the blob
  // frame then holds that codec's compressed bytes, encoded with block_size. A decoded EmbedReply
  // holds the decoded floats, the codec and, for int8, the blob's block size.
  CompressionSettings encoding = {};
  bool operator==(const EmbedReply&) const = default;
  // The fields and blob frame.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Count("rows", m.rows, &Limits::max_embed_rows);
    f.Count("cols", m.cols, &Limits::max_embed_cols);
    f.Optional();
    f.Encoding("encoding", m.encoding, BlobContents::kEmbeddings);
    f.Blob("embeddings", m.embeddings, uint64_t{m.rows} * m.cols);
  }
};

// One side's decision about an EMD edge; the edge holds only if both sides accept.
struct EmdDecision {
  static constexpr MessageType kType = MessageType::kEmdDecision;
  bool accepted = false;
  double emd = 0;        // EMD between the sender's train embeddings and the receiver's val ones
  double reference = 0;  // the sender's own train-vs-val EMD
  // Automatic rule only (similarity/emd_decision.h, step 1): the ids the sender's own row leans
  // to accept, sorted. Absent on the wire with a fixed ε and from older nodes.
  std::optional<std::vector<std::string>> accepts;
  bool operator==(const EmdDecision&) const = default;
  // The fields.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Bool("accepted", m.accepted);
    f.Float64("emd", m.emd);
    f.Float64("reference", m.reference);
    f.Optional();
    f.NodeIds("accepts", m.accepts, &Limits::max_peers);
  }
};

// Witness mode of the EMD exchange (DESIGN.md "EMD embedding exchange", emd_witness): like
// EmbedRequest, but the responder sends its projected rows to `witness` in a WitnessRows instead of
// returning them, so the requester never sees them. The responder answers with the witness's
// WitnessResult (or an Error) once the witness has answered it.
struct WitnessEmbedRequest {
  static constexpr MessageType kType = MessageType::kWitnessEmbedRequest;
  uint64_t projection_seed = 0;  // seeds the shared random projection R; never sent to the witness
  uint32_t max_samples = 512;    // at most this many validation samples are embedded
  uint64_t session = 0;          // names this measurement at the witness (random, not the seed)
  PeerInfo witness;              // the third peer that measures the EMD
  ParamLayout layout;            // describes `weights`
  FloatArray weights;            // blob frame 2: the requester's model
  bool operator==(const WitnessEmbedRequest&) const = default;
  // The fields and blob frame.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Uint("projection_seed", m.projection_seed, UINT64_MAX);
    f.Count("max_samples", m.max_samples, &Limits::max_embed_rows);
    f.Uint("session", m.session, UINT64_MAX);
    f.Struct("witness", m.witness);
    f.Layout("layout", m.layout);
    f.Blob("weights", m.weights, m.layout.total_floats());
  }
};

// Which set of a witnessed measurement a WitnessRows carries.
enum class WitnessSide : uint8_t {
  kRequesterTrain = 0,       // the requester's training embeddings (sent by the requester)
  kResponderValidation = 1,  // the responder's validation embeddings (sent by the responder)
};

// One side's projected embeddings, sent to the witness of a measurement. The witness pairs the two
// sides by (session, requester, responder), computes W(train_requester, val_responder) and answers
// both with a WitnessResult. Never raw samples.
struct WitnessRows {
  static constexpr MessageType kType = MessageType::kWitnessRows;
  uint64_t session = 0;
  std::string requester;  // node id of the requester (i)
  std::string responder;  // node id of the responder (j)
  WitnessSide side = WitnessSide::kRequesterTrain;
  uint32_t rows = 0;
  uint32_t cols = 0;
  FloatArray embeddings;  // blob frame 2: rows * cols values
  // Optional field 6 (since version 3, kCompressedEmbeddingVersion): how `embeddings` travels, as
  // EmbedReply.encoding. A request has no reply to negotiate with, so the sender compresses only
  // for a witness whose Hello or HelloAck announced kCompressedEmbeddingVersion or later (every
  // such node decodes EmbeddingCodecs()).
  CompressionSettings encoding = {};
  bool operator==(const WitnessRows&) const = default;
  // The fields and blob frame.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Uint("session", m.session, UINT64_MAX);
    f.NodeId("requester", m.requester);
    f.NodeId("responder", m.responder);
    f.Uint("side", m.side, 1);
    f.Count("rows", m.rows, &Limits::max_embed_rows);
    f.Count("cols", m.cols, &Limits::max_embed_cols);
    f.Optional();
    f.Encoding("encoding", m.encoding, BlobContents::kEmbeddings);
    f.Blob("embeddings", m.embeddings, uint64_t{m.rows} * m.cols);
  }
};

// The witness's answer to both sides of a measurement: only the scalar distance.
struct WitnessResult {
  static constexpr MessageType kType = MessageType::kWitnessResult;
  uint64_t session = 0;
  double emd = 0;  // W(train_requester, val_responder)
  bool operator==(const WitnessResult&) const = default;
  // The fields.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Uint("session", m.session, UINT64_MAX);
    f.Float64("emd", m.emd);
  }
};

// A request for the responder's FLT data signature (DESIGN.md "Other seed methods", FLT).
// Rationale: the signature depends only on the responder's data and the shared initial model, so
// the request needs no fields; a later version may append some.
struct GetSignature {
  static constexpr MessageType kType = MessageType::kGetSignature;
  bool operator==(const GetSignature&) const = default;
  // No fields: an empty array.
  template <class Fields, class Self>
  static void Describe(Fields& /*f*/, Self& /*m*/) {}
};

// The responder's data signature: the k-means centroids of its training samples' embeddings
// under the shared initial model. Never raw samples.
struct Signature {
  static constexpr MessageType kType = MessageType::kSignature;
  uint32_t rows = 0;     // k, the number of centroids
  uint32_t cols = 0;     // the embedding width
  FloatArray centroids;  // blob frame 2: rows * cols float32 values, one centroid per row
  bool operator==(const Signature&) const = default;
  // The fields and blob frame.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Count("rows", m.rows, &Limits::max_embed_rows);
    f.Count("cols", m.cols, &Limits::max_embed_cols);
    f.Blob("centroids", m.centroids, uint64_t{m.rows} * m.cols);
  }
};

// A node leaving the mesh (it stops, or finished its rounds) tells each active peer, so that the
// peer stops sampling it at once instead of waiting for deadlines. The receiver acknowledges with a
// Goodbye whose reason is empty. The leaver is welcomed back by its next Hello. Since version 2:
// sent only to peers that announced kGoodbyeVersion or later.
struct Goodbye {
  static constexpr MessageType kType = MessageType::kGoodbye;
  std::string reason;  // why the sender leaves, for the receiver's log (e.g. "stopped by signal")
  bool operator==(const Goodbye&) const = default;
  // The fields.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.String("reason", m.reason);
  }
};

// Liveness probe and its answer.
struct Ping {
  static constexpr MessageType kType = MessageType::kPing;
  uint64_t nonce = 0;
  bool operator==(const Ping&) const = default;
  // The fields (Pong's too).
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Uint("nonce", m.nonce, UINT64_MAX);
  }
};
struct Pong : Ping {
  static constexpr MessageType kType = MessageType::kPong;
  bool operator==(const Pong&) const = default;
};

// The reply to a request that could not be served: an ErrorCode (base/status.h) and text.
struct Error {
  static constexpr MessageType kType = MessageType::kError;
  ErrorCode code = ErrorCode::kInternal;
  std::string text;
  bool operator==(const Error&) const = default;
  // The fields. Unknown codes are kept as numbers.
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Uint("code", m.code, UINT16_MAX);
    f.String("text", m.text);
  }
};

// Any message body. The variant order is irrelevant to the wire (the envelope's type selects).
using Body = std::variant<Hello, HelloAck, PeerList, GetModel, Model, EmbedRequest, EmbedReply,
                          EmdDecision, Ping, Pong, Error, WitnessEmbedRequest, WitnessRows,
                          WitnessResult, GetSignature, Signature, Goodbye>;

// Returns the type number of `body`.
MessageType TypeOf(const Body& body);

// A whole message. Encode() fills envelope.type from the body.
struct Message {
  Envelope envelope;
  Body body;
  bool operator==(const Message&) const = default;
};

// Builds a message from this build's version constants, `sender`, `request_id`, `round`, `body`.
Message MakeMessage(std::string sender, uint64_t request_id, int64_t round, Body body);

}  // namespace meshlearn
