#pragma once
// Tick marks a reader can take in at a glance: multiples of 1, 2 or 5 times a power of ten.
#include <string>
#include <vector>

namespace tinygpt::plot {

struct AxisTicks {
  std::vector<double> values;  // ascending, all within [lo, hi]
  double step = 1.0;
};

// At most max_ticks (>= 2) round values inside [lo, hi] (lo < hi), as many as that allows, spaced
// at least min_step apart (1 keeps ticks on whole numbers, for counts such as steps). There is
// always at least one tick unless min_step is wider than [lo, hi] and no multiple falls inside.
AxisTicks nice_ticks(double lo, double hi, int max_ticks, double min_step = 0.0);

// A tick value with as many decimals as the step needs: 0.5 -> "0.5", 2000 -> "2000", never "-0".
std::string format_tick(double value, double step);

}  // namespace tinygpt::plot
