#pragma once
// Little-endian numbers in byte buffers: the one place where the file and wire formats (the
// compressed blobs of protocol/compression.h, the top-k chain frames of protocol/codec.h, the
// shard files of training/shard_file.h) read and write their integers and floats.
//
// meshlearn runs on little-endian hosts only, so each call is a copy in host order, which the
// compiler turns into a plain load or store (and vectorises in loops).
// Rationale: blob frames are float32 views of the received bytes (protocol/frame.h) and are never
// copied; a big-endian port would byte-swap in these functions and give up those views.

#include <bit>
#include <cstdint>
#include <cstring>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>

namespace meshlearn {

static_assert(std::endian::native == std::endian::little,
              "meshlearn's formats are little-endian and read in host order; add byte swapping "
              "to base/little_endian.h for this platform");

// The values these functions read and write: integers and floats.
template <class T>
concept LittleEndianValue = std::is_arithmetic_v<T>;

// Writes `value` at `at` as sizeof(T) bytes, least significant first. No alignment needed.
template <LittleEndianValue T>
inline void StoreLittleEndian(uint8_t* at, T value) {
  std::memcpy(at, &value, sizeof(T));
}

// Reads a T from the sizeof(T) bytes at `at`, least significant first. No alignment needed.
template <LittleEndianValue T>
inline T LoadLittleEndian(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

// Reads out.size() consecutive values from the bytes at `at` into `out`.
template <LittleEndianValue T>
inline void LoadLittleEndian(const uint8_t* at, std::span<T> out) {
  if (!out.empty()) std::memcpy(out.data(), at, out.size_bytes());
}

// Appends the values of `values` (a contiguous range: a vector, a span), each as sizeof bytes,
// least significant first, to `out` (a std::string or a std::vector<uint8_t>).
template <class Bytes, std::ranges::contiguous_range Values>
requires LittleEndianValue<std::ranges::range_value_t<Values>>
inline void AppendLittleEndian(Bytes& out, const Values& values) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(std::ranges::data(values));
  const size_t size = std::ranges::size(values) * sizeof(std::ranges::range_value_t<Values>);
  if constexpr (std::is_same_v<Bytes, std::string>) {
    out.append(reinterpret_cast<const char*>(bytes), size);
  } else {
    out.insert(out.end(), bytes, bytes + size);
  }
}

// Appends `value` as sizeof(T) bytes, least significant first, to `out` (a std::string or a
// std::vector<uint8_t>).
template <class Bytes, LittleEndianValue T>
inline void AppendLittleEndian(Bytes& out, T value) {
  AppendLittleEndian(out, std::span<const T>(&value, 1));
}

}  // namespace meshlearn
