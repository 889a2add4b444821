#pragma once
// The byte format of a decode-fuzzer input: a multipart message flattened into one buffer. Shared
// by the fuzzer (decode_fuzzer.cc), its replay driver and the seed-corpus writer (write_seeds.cc).
//
//   input := frame*
//   frame := length (uint16, little-endian) followed by `length` bytes
//
// - Every message of frames of at most 65535 bytes each has exactly one encoding (JoinFuzzInput),
//   so each v1 fixture becomes one seed, and zero, one or more frames than a message needs can be
//   expressed too.
// - Every byte string is a valid input (SplitFuzzInput): a length running past the end of the
//   input takes the bytes that are left, and a single byte left where a length would start is
//   ignored.
//   Rationale: a mutated length must not turn the whole input into something the decoder never
//   sees.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/frame.h"

namespace meshlearn::fuzz {

// The largest frame a fuzz input can hold.
inline constexpr size_t kMaxFuzzFrameBytes = 0xffff;

// Splits `input` into frames as described above. Each frame owns an exact-size copy of its bytes.
// Rationale: a frame viewing the middle of the input would let an over-read into the next frame
// go unnoticed; an exact-size heap block puts AddressSanitizer's redzone right after the frame.
inline std::vector<Frame> SplitFuzzInput(std::span<const uint8_t> input) {
  std::vector<Frame> frames;
  size_t at = 0;
  while (input.size() - at >= 2) {
    size_t length = static_cast<size_t>(input[at]) | (static_cast<size_t>(input[at + 1]) << 8);
    at += 2;
    if (length > input.size() - at) length = input.size() - at;
    frames.push_back(Frame::CopyOf(input.data() + at, length));
    at += length;
  }
  return frames;
}

// Encodes `frames` as one fuzz input, the inverse of SplitFuzzInput. Returns nullopt when a frame
// is larger than kMaxFuzzFrameBytes.
inline std::optional<std::vector<uint8_t>> JoinFuzzInput(std::span<const Frame> frames) {
  std::vector<uint8_t> input;
  for (const Frame& frame : frames) {
    if (frame.size() > kMaxFuzzFrameBytes) return std::nullopt;
    input.push_back(static_cast<uint8_t>(frame.size() & 0xff));
    input.push_back(static_cast<uint8_t>(frame.size() >> 8));
    input.insert(input.end(), frame.bytes().begin(), frame.bytes().end());
  }
  return input;
}

}  // namespace meshlearn::fuzz
