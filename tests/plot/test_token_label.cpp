#include <catch2/catch.hpp>

#include "tinygpt/plot/token_label.hpp"

using tinygpt::plot::visible_token;

TEST_CASE("visible_token makes whitespace visible and non-ASCII characters '?'", "[plot][labels]") {
  CHECK(visible_token("a") == "a");
  CHECK(visible_token(" ") == "_");
  CHECK(visible_token("\n") == "\\n");
  CHECK(visible_token("\t") == "\\t");
  CHECK(visible_token(" the") == "_the");
  CHECK(visible_token("\x01") == "?");
  CHECK(visible_token("caf\xc3\xa9") == "caf?");            // é: one code point, one '?'
  CHECK(visible_token("\xe2\x96\x81x") == "?x");            // U+2581, three bytes
  CHECK(visible_token("\xf0\x9f\x98\x80") == "?");          // an emoji, four bytes
  CHECK(visible_token(std::string("\x80") + "a") == "?a");  // a stray continuation byte
  CHECK(visible_token("") == "");
}
