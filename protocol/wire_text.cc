#include "protocol/wire_text.h"

#include <cstdint>

namespace meshlearn {

bool IsValidUtf8(std::string_view text) {
  // Rationale: a hand-written validator keeps the protocol library free of dependencies other
  // than msgpack (DESIGN.md, "Layout and dependency rules"); it is covered by the codec tests and
  // the decode fuzzer.
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    uint8_t c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t code;
    uint32_t min;
    if ((c & 0xe0) == 0xc0) {
      length = 2;
      code = c & 0x1f;
      min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      length = 3;
      code = c & 0x0f;
      min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      length = 4;
      code = c & 0x07;
      min = 0x10000;
    } else {
      return false;  // a continuation byte or 0xf8..0xff where a character must start
    }
    if (n - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      uint8_t next = static_cast<uint8_t>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

bool IsNodeId(std::string_view id) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (id.empty() || id.size() > kMaxNodeIdBytes || !alnum(id[0])) return false;
  for (char c : id) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

std::string Printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

}  // namespace meshlearn
