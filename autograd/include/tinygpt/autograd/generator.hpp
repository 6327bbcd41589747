#pragma once
// A seeded random generator whose stream is the same on every machine and compiler
// (xoshiro256** seeded by splitmix64; normals by Box-Muller), unlike <random>'s distributions.
// Its whole state is four words, so a checkpoint can save and restore it exactly.
#include <array>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

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

  // Moves `count` items drawn uniformly without replacement to the front of `items`, in the order
  // drawn: the first `count` steps of a Fisher-Yates shuffle (one randint each).
  template <class Sequence>
  void shuffle_front(Sequence& items, int64_t count) {
    const auto size = static_cast<int64_t>(items.size());
    if (count < 0 || count > size) {
      throw ValueError(fmt::format("Generator::shuffle_front: cannot draw {} of {} items", count, size));
    }
    for (int64_t i = 0; i < count; ++i) {
      std::swap(items[static_cast<size_t>(i)], items[static_cast<size_t>(i + randint(size - i))]);
    }
  }

  const State& state() const { return s_; }
  void set_state(const State& s) { s_ = s; }

 private:
  State s_{};
};

}  // namespace tinygpt
