#include "tinygpt/data/utf8.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::data {
namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

bool is_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

uint32_t as_u32(char32_t cp) { return static_cast<uint32_t>(cp); }

[[noreturn]] void throw_invalid(size_t offset, const std::string& what) {
  throw ValueError(fmt::format("invalid UTF-8 at byte offset {}: {}", offset, what));
}

struct Decoded {
  char32_t cp;
  size_t length;  // bytes consumed
};

// Decodes the one character that starts at `offset` (which must be < bytes.size()).
Decoded decode_one(std::string_view bytes, size_t offset) {
  const auto lead = static_cast<unsigned char>(bytes[offset]);
  if (lead < 0x80) return {lead, 1};

  size_t length;
  char32_t cp;
  char32_t smallest;  // below this the same value has a shorter encoding (an overlong form)
  if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, smallest = 0x10000;
  } else if ((lead & 0xC0) == 0x80) {
    throw_invalid(offset, fmt::format("continuation byte 0x{:02X} without a lead byte", lead));
  } else {
    throw_invalid(offset, fmt::format("byte 0x{:02X} never occurs in UTF-8", lead));
  }

  for (size_t k = 1; k < length; ++k) {
    if (offset + k >= bytes.size()) {
      throw_invalid(offset, fmt::format("lead byte 0x{:02X} starts a {}-byte sequence but the "
                                        "text ends after {} of its bytes",
                                        lead, length, k));
    }
    const auto next = static_cast<unsigned char>(bytes[offset + k]);
    if ((next & 0xC0) != 0x80) {
      throw_invalid(offset, fmt::format("lead byte 0x{:02X} starts a {}-byte sequence but byte "
                                        "0x{:02X} at offset {} is not a continuation byte",
                                        lead, length, next, offset + k));
    }
    cp = (cp << 6) | (next & 0x3F);
  }

  if (cp < smallest) {
    throw_invalid(offset, fmt::format("overlong {}-byte encoding of U+{:04X}", length, as_u32(cp)));
  }
  if (is_surrogate(cp)) {
    throw_invalid(offset, fmt::format("encoded UTF-16 surrogate U+{:04X}", as_u32(cp)));
  }
  if (cp > kMaxCodePoint) {
    throw_invalid(offset,
                  fmt::format("U+{:04X} is above U+10FFFF, the last code point", as_u32(cp)));
  }
  return {cp, length};
}

}  // namespace

std::u32string decode_utf8(std::string_view bytes) {
  std::u32string out;
  out.reserve(bytes.size());
  for (size_t offset = 0; offset < bytes.size();) {
    const Decoded d = decode_one(bytes, offset);
    out.push_back(d.cp);
    offset += d.length;
  }
  return out;
}

void check_utf8(std::string_view bytes) {
  for (size_t offset = 0; offset < bytes.size();) offset += decode_one(bytes, offset).length;
}

void append_utf8(std::string& out, char32_t cp) {
  if (is_surrogate(cp) || cp > kMaxCodePoint) {
    throw ValueError(
        Operation("encode_utf8"),
        fmt::format("U+{:04X} is not a Unicode scalar value "
                    "(surrogates and values above U+10FFFF have no UTF-8 form)",
                    as_u32(cp)));
  }
  auto put = [&out](uint32_t byte) { out.push_back(static_cast<char>(byte)); };
  const uint32_t v = as_u32(cp);
  if (v < 0x80) {
    put(v);
  } else if (v < 0x800) {
    put(0xC0 | (v >> 6));
    put(0x80 | (v & 0x3F));
  } else if (v < 0x10000) {
    put(0xE0 | (v >> 12));
    put(0x80 | ((v >> 6) & 0x3F));
    put(0x80 | (v & 0x3F));
  } else {
    put(0xF0 | (v >> 18));
    put(0x80 | ((v >> 12) & 0x3F));
    put(0x80 | ((v >> 6) & 0x3F));
    put(0x80 | (v & 0x3F));
  }
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t cp : code_points) append_utf8(out, cp);
  return out;
}

std::string describe_code_point(char32_t cp) {
  const std::string code = fmt::format("U+{:04X}", as_u32(cp));
  switch (cp) {
    case U'\n':
      return code + " '\\n'";
    case U'\t':
      return code + " '\\t'";
    case U'\r':
      return code + " '\\r'";
    default:
      break;
  }
  const bool invisible =
      cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || is_surrogate(cp) || cp > kMaxCodePoint;
  if (invisible) return code;
  std::string glyph;
  append_utf8(glyph, cp);
  return code + " '" + glyph + "'";
}

}  // namespace tinygpt::data
