#pragma once
// SHA-256 (FIPS 180-4), for the checksums of checkpoint files and training data: a damaged or
// changed file is told apart from the one recorded. Not for secrets (no constant-time claims).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tinygpt::io {

// Incremental: update() any number of times, then hex_digest() once.
class Sha256 {
 public:
  // Where the rounds run: on the CPU's SHA extensions where it has them, or in portable code on
  // every CPU (which the tests hold against the extensions on a CPU that has both).
  enum class Rounds { fastest, portable };
  explicit Sha256(Rounds rounds = Rounds::fastest);
  void update(std::string_view bytes);
  // The 64 lowercase hex digits of the digest. The object is spent afterwards.
  std::string hex_digest();

 private:
  // The rounds of `count` consecutive 64-byte blocks: on the CPU's SHA extensions where it has
  // them, else compress_portably's, one block at a time.
  void compress(const uint8_t* blocks, size_t count);
  void compress_portably(const uint8_t* block);

  Rounds rounds_;
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// The hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace tinygpt::io
