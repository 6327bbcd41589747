// excerpt: what a message may quote of a value, whole when short, else a prefix that ends on a
// whole UTF-8 character and says how long the value was.
#include <catch2/catch.hpp>

#include "tinygpt/autograd/error.hpp"

TEST_CASE("excerpt keeps short text and cuts long text at a character boundary", "[errors]") {
  CHECK(tinygpt::excerpt("abc") == "abc");
  CHECK(tinygpt::excerpt(std::string(60, 'a')) == std::string(60, 'a'));
  CHECK(tinygpt::excerpt(std::string(100, 'a'), 10) == "aaaaaaaaaa... (100 bytes)");
  // "é" is two bytes: a cut after 3 bytes of "aaé..." would split it, so it stops before.
  CHECK(tinygpt::excerpt("aa\xC3\xA9" + std::string(20, 'b'), 3) == "aa... (24 bytes)");
}
