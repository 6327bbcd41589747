// SHA-256 against the FIPS 180-4 / NIST example vectors and sha256sum, whole and fed in pieces,
// with its rounds on the CPU's SHA extensions (where it has them) and in portable code.
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "tinygpt/io/sha256.hpp"

using tinygpt::io::Sha256;

namespace {

// The hex digest of `text` with each of the two rounds, which must agree.
std::string digest_both_ways(std::string_view text) {
  Sha256 fastest, portable(Sha256::Rounds::portable);
  fastest.update(text);
  portable.update(text);
  const std::string digest = fastest.hex_digest();
  CHECK(portable.hex_digest() == digest);
  CHECK(tinygpt::io::sha256_hex(text) == digest);
  return digest;
}

}  // namespace

TEST_CASE("sha256 matches the NIST example vectors", "[io][sha256]") {
  CHECK(digest_both_ways("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(digest_both_ways("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(digest_both_ways("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(digest_both_ways(std::string(1'000'000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256 pads every length around the block boundary", "[io][sha256]") {
  // printf 'a%.0s' $(seq N) | sha256sum, for lengths where the padding changes shape.
  CHECK(digest_both_ways(std::string(55, 'a')) ==
        "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(digest_both_ways(std::string(56, 'a')) ==
        "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(digest_both_ways(std::string(64, 'a')) ==
        "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST_CASE("sha256 fed in pieces equals sha256 of the whole", "[io][sha256]") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7 + 3);
  const std::string whole = digest_both_ways(text);
  for (const Sha256::Rounds rounds : {Sha256::Rounds::fastest, Sha256::Rounds::portable}) {
    for (size_t piece : {1, 3, 63, 64, 65, 200}) {
      Sha256 hash(rounds);
      for (size_t at = 0; at < text.size(); at += piece) hash.update(std::string_view(text).substr(at, piece));
      CHECK(hash.hex_digest() == whole);
    }
  }
}
