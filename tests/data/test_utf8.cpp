#include <catch2/catch.hpp>

#include "data/message_contains.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/utf8.hpp"

using namespace tinygpt;
using namespace tinygpt::data;
using tinygpt::testing::MessageContains;

TEST_CASE("utf8 decodes ASCII and multi-byte characters to one code point each", "[data][utf8]") {
  const std::string text = "h\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80";  // hé 日本 😀
  const std::u32string expected = {U'h', 0xE9, U' ', 0x65E5, 0x672C, U' ', 0x1F600};
  CHECK(decode_utf8(text) == expected);
  CHECK(encode_utf8(expected) == text);
}

TEST_CASE("utf8 round-trips the boundary code points of every sequence length", "[data][utf8]") {
  const std::u32string boundaries = {0x0,    0x7F,   0x80,   0x7FF,   0x800,
                                     0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
  const std::string bytes = encode_utf8(boundaries);
  CHECK(bytes.size() == 1 + 1 + 2 + 2 + 3 + 3 + 3 + 3 + 4 + 4);
  CHECK(decode_utf8(bytes) == boundaries);
}

TEST_CASE("utf8 rejects invalid sequences with the byte offset where they start", "[data][utf8]") {
  struct Case {
    std::string bytes;
    size_t offset;
    std::string reason;
  };
  const Case cases[] = {
      {"ab\x80", 2, "continuation byte 0x80 without a lead byte"},
      {"\xC0\xAF", 0, "overlong 2-byte encoding of U+002F"},
      {"x\xE0\x80\xAF", 1, "overlong 3-byte encoding"},
      {"\xF0\x80\x80\xAF", 0, "overlong 4-byte encoding"},
      {"ok\xED\xA0\x80", 2, "surrogate U+D800"},
      {"\xF4\x90\x80\x80", 0, "U+110000 is above U+10FFFF"},
      {"abc\xE6\x97", 3, "the text ends after 2 of its bytes"},
      {"\xC3(", 0, "byte 0x28 at offset 1 is not a continuation byte"},
      {"a\xFF", 1, "byte 0xFF never occurs in UTF-8"},
      {"\xF8\x88\x80\x80\x80", 0, "byte 0xF8 never occurs in UTF-8"},
  };
  for (const Case& c : cases) {
    INFO("reason: " << c.reason);
    const std::string where = "at byte offset " + std::to_string(c.offset) + ":";
    CHECK_THROWS_MATCHES(decode_utf8(c.bytes), ValueError,
                         MessageContains(where) && MessageContains(c.reason));
    CHECK_THROWS_MATCHES(check_utf8(c.bytes), ValueError, MessageContains(where));
  }
}

TEST_CASE("utf8 encoding rejects surrogates and values above U+10FFFF", "[data][utf8]") {
  CHECK_THROWS_MATCHES(encode_utf8(std::u32string{0xDC00}), ValueError, MessageContains("U+DC00"));
  CHECK_THROWS_MATCHES(encode_utf8(std::u32string{0x110000}), ValueError,
                       MessageContains("U+110000"));
}

TEST_CASE("utf8 describes code points in a readable form", "[data][utf8]") {
  CHECK(describe_code_point(0xE9) == "U+00E9 '\xC3\xA9'");
  CHECK(describe_code_point(U'\n') == "U+000A '\\n'");
  CHECK(describe_code_point(0x07) == "U+0007");
  CHECK(describe_code_point(0x1F600) == "U+1F600 '\xF0\x9F\x98\x80'");
}
