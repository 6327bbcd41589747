#pragma once
// A seeded random generator whose stream is the same on every machine and compiler
// (xoshiro256** seeded by splitmix64; normals by Box-Muller), unlike <random>'s distributions.
// Its whole state is four words, so a checkpoint can save and restore it exactly.
#include <array>
#include <cstdint>

namespace tinygpt {

class Generator {
 public:
  using State = std::array<uint64_t, 4>;

  explicit Generator(uint64_t seed = 0) { seed_with(seed); }
  void seed_with(uint64_t seed);

  uint64_t next_u64();
  double uniform();                 // [0, 1), 53 random bits
  double normal();                  // mean 0, std 1
  int64_t randint(int64_t n);       // uniform in [0, n), unbiased; n must be > 0

  const State& state() const { return s_; }
  void set_state(const State& s) { s_ = s; }

 private:
  State s_{};
};

}  // namespace tinygpt
