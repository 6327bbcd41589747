#include "tinygpt/heads/row_tally.hpp"

#include <algorithm>
#include <cmath>

namespace tinygpt::heads {

void RowTally::add_row(const float* w, int64_t i, int64_t keys) {
  ++rows;
  current += w[i];
  if (i >= 1) {
    previous += w[i - 1];
    first += w[0];
    ++previous_n;
  }
  if (i + 1 < keys) {
    next += w[i + 1];
    last += w[keys - 1];
    ++next_n;
  }
  for (int64_t j = std::max<int64_t>(0, i - kLocalReach); j < std::min(keys, i + kLocalReach + 1); ++j) local += w[j];
  if (keys >= 2) {
    double h = 0.0;
    for (int64_t j = 0; j < keys; ++j) h -= w[j] > 0.0f ? w[j] * std::log(static_cast<double>(w[j])) : 0.0;
    entropy += h / std::log(static_cast<double>(keys));
    ++entropy_n;
  }
}

}  // namespace tinygpt::heads
