#include "tinygpt/plot/axis_ticks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::plot {
namespace {

// The smallest of 1, 2, 5, 10 times a power of ten that is at least x (> 0).
double round_up_to_nice(double x) {
  const double power = std::pow(10.0, std::floor(std::log10(x)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * power >= x * (1.0 - 1e-12)) return m * power;
  }
  return 10.0 * power;
}

}  // namespace

AxisTicks nice_ticks(double lo, double hi, int max_ticks, double min_step) {
  if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi) || max_ticks < 2) {
    throw ValueError(Operation("nice_ticks"),
        fmt::format("need finite lo < hi and max_ticks >= 2, got [{}, {}] "
                    "and {}",
                    lo, hi, max_ticks));
  }
  // The finest step of the 1-2-5 sequence whose multiples inside [lo, hi] number at most
  // max_ticks. Below range / (max_ticks + 1) there would always be too many.
  const auto first_last = [lo, hi](double step) {
    return std::pair{std::ceil(lo / step - 1e-9), std::floor(hi / step + 1e-9)};
  };
  double step = round_up_to_nice(std::max((hi - lo) / (max_ticks + 1), min_step));
  for (;;) {
    const auto [first, last] = first_last(step);
    if (last - first + 1 <= max_ticks) break;
    step = round_up_to_nice(step * 1.5);  // the next of 1, 2, 5, 10, ...
  }
  AxisTicks ticks;
  ticks.step = step;
  const auto [first, last] = first_last(step);
  for (double k = first; k <= last; k += 1.0) ticks.values.push_back(std::clamp(k * step, lo, hi));
  return ticks;
}

std::string format_tick(double value, double step) {
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  if (std::abs(value) < step * 1e-6) value = 0.0;  // so a tick at 0 never reads "-0"
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace tinygpt::plot
