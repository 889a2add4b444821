#include "base/status.h"

namespace meshlearn {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kMalformed:
      return "malformed";
    case ErrorCode::kBadMagic:
      return "bad_magic";
    case ErrorCode::kUnsupportedVersion:
      return "unsupported_version";
    case ErrorCode::kUnknownType:
      return "unknown_type";
    case ErrorCode::kTooLarge:
      return "too_large";
    case ErrorCode::kTooMany:
      return "too_many";
    case ErrorCode::kLayoutMismatch:
      return "layout_mismatch";
    case ErrorCode::kNonFinite:
      return "non_finite";
    case ErrorCode::kUnknownSender:
      return "unknown_sender";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kIoError:
      return "io_error";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kRefused:
      return "refused";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

Status::Status(ErrorCode code, std::string message)
    : code_(code), message_(code == ErrorCode::kOk ? std::string() : std::move(message)) {}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(ErrorCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace meshlearn
