#pragma once
// The positional role scores of attention rows whose keys lie on both sides of the query (an
// encoder's self-attention; a causal row is the case keys = i + 1): sums over the rows added and
// how many rows each score is defined for. Shared by the encoder-decoder's heads
// (seq2seq/pair_heads.hpp) and the encoder's (encoder_heads.hpp).
#include <cstdint>

namespace tinygpt::heads {

// Keys within this distance of the query count as local.
inline constexpr int64_t kLocalReach = 2;

struct RowTally {
  double previous = 0, next = 0, current = 0, first = 0, last = 0, local = 0, entropy = 0;
  int64_t previous_n = 0, next_n = 0, rows = 0, entropy_n = 0;

  // Row i of a pattern whose visible keys are [0, keys) (w: the row's weights): the weight on
  // i - 1 and on key 0 (queries i >= 1), on i + 1 and on the last key (queries i + 1 < keys), on
  // i itself and within kLocalReach of it, and the row's entropy over its keys divided by its
  // maximum (0 one key, 1 flat; rows of two keys or more).
  void add_row(const float* w, int64_t i, int64_t keys);

  static double mean(double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; }
  double previous_token() const { return mean(previous, previous_n); }
  double next_token() const { return mean(next, next_n); }
  double current_token() const { return mean(current, rows); }
  double first_token() const { return mean(first, previous_n); }
  double last_token() const { return mean(last, next_n); }
  double local_mass() const { return mean(local, rows); }
  double mean_entropy() const { return mean(entropy, entropy_n); }
};

}  // namespace tinygpt::heads
