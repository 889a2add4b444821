#pragma once
// Status and Result<T>: the project-wide way to report an error without throwing.
//
// Anything a peer, a file or a user can put in front of the code returns one of these. The error
// codes are part of the wire protocol (they travel inside `Error` messages), so their numbers are
// frozen: add new codes at the end, never renumber, and keep retired ones as comments.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace meshlearn {

// Error codes. Numbers are frozen (see protocol/PROTOCOL.md, "Error codes").
enum class ErrorCode : uint16_t {
  kOk = 0,
  kMalformed = 1,           // bytes do not decode as the expected msgpack structure
  kBadMagic = 2,            // the envelope does not start with the meshlearn magic
  kUnsupportedVersion = 3,  // the peer's version range does not overlap ours
  kUnknownType = 4,         // message type number not known to this build
  kTooLarge = 5,            // message or frame larger than the configured byte limit
  kTooMany = 6,             // a count (frames, peers, tensors, rows) above its limit
  kLayoutMismatch = 7,      // tensor layout differs from the local model, or blob size is wrong
  kNonFinite = 8,           // NaN or Inf in a float payload
  kUnknownSender = 9,       // sender not on the allowlist / not a known peer
  kInvalidArgument = 10,    // a caller or config value outside what is allowed
  kNotFound = 11,           // a file or named thing does not exist
  kIoError = 12,            // reading or writing a file failed
  kTimeout = 13,            // no answer before the deadline
  kUnavailable = 14,        // the peer or resource cannot serve now (e.g. stopping)
  kRefused = 15,            // the peer refused us (architecture or policy mismatch)
  kInternal = 16,           // a bug on the replying side; details in the text
};

// Returns the stable lower_snake_case name of `code` ("too_large"), or "unknown" if the number is
// not a known code.
const char* ErrorCodeName(ErrorCode code);

// The outcome of an operation: OK, or an error code plus a message a person can act on.
class Status {
 public:
  // Constructs an OK status.
  Status() = default;
  // Constructs a status with `code` and `message`; `code` == kOk yields OK and drops the message.
  Status(ErrorCode code, std::string message);

  // Named constructors, one per code.
  static Status Ok() { return Status(); }
  static Status Malformed(std::string m) { return {ErrorCode::kMalformed, std::move(m)}; }
  static Status BadMagic(std::string m) { return {ErrorCode::kBadMagic, std::move(m)}; }
  static Status UnsupportedVersion(std::string m) {
    return {ErrorCode::kUnsupportedVersion, std::move(m)};
  }
  static Status UnknownType(std::string m) { return {ErrorCode::kUnknownType, std::move(m)}; }
  static Status TooLarge(std::string m) { return {ErrorCode::kTooLarge, std::move(m)}; }
  static Status TooMany(std::string m) { return {ErrorCode::kTooMany, std::move(m)}; }
  static Status LayoutMismatch(std::string m) { return {ErrorCode::kLayoutMismatch, std::move(m)}; }
  static Status NonFinite(std::string m) { return {ErrorCode::kNonFinite, std::move(m)}; }
  static Status UnknownSender(std::string m) { return {ErrorCode::kUnknownSender, std::move(m)}; }
  static Status InvalidArgument(std::string m) {
    return {ErrorCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
  static Status IoError(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
  static Status Timeout(std::string m) { return {ErrorCode::kTimeout, std::move(m)}; }
  static Status Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
  static Status Refused(std::string m) { return {ErrorCode::kRefused, std::move(m)}; }
  static Status Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

  // True when the operation succeeded.
  bool ok() const { return code_ == ErrorCode::kOk; }
  // The error code (kOk when ok()).
  ErrorCode code() const { return code_; }
  // The human-readable message (empty when ok()).
  const std::string& message() const { return message_; }
  // "OK" or "<code name>: <message>".
  std::string ToString() const;
  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(const std::string& context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Either a value of type T or a non-OK Status. Accessing the value of an error Result is a bug
// and aborts in debug builds; check ok() first.
template <typename T>
class Result {
 public:
  // Implicit from a value: `return value;`.
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  // Implicit from an error status: `return Status::Malformed("...");`. An OK status here is a
  // bug and is turned into kInternal.
  Result(Status status)  // NOLINT(google-explicit-constructor)
      : status_(status.ok() ? Status::Internal("Result built from an OK status without a value")
                            : std::move(status)) {}

  // True when a value is present.
  bool ok() const { return value_.has_value(); }
  // The error (OK when a value is present).
  const Status& status() const { return status_; }
  // The value; requires ok().
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace meshlearn

// Evaluates `expr` (a Status); returns it from the enclosing function if it is not OK.
#define MESHLEARN_RETURN_IF_ERROR(expr)            \
  do {                                             \
    ::meshlearn::Status _meshlearn_st = (expr);    \
    if (!_meshlearn_st.ok()) return _meshlearn_st; \
  } while (0)
