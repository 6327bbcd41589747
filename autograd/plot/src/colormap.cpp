#include "tinygpt/plot/colormap.hpp"

#include <array>
#include <cmath>

namespace tinygpt::plot {

Rgb viridis(float t) {
  // matplotlib's viridis sampled at eleven evenly spaced points (viridisLite::viridis(11));
  // linear interpolation between them stays within a shade of the full 256-entry table.
  static constexpr std::array<Rgb, 11> kStops = {{{68, 1, 84},
                                                  {72, 36, 117},
                                                  {65, 68, 135},
                                                  {53, 95, 141},
                                                  {42, 120, 142},
                                                  {33, 145, 140},
                                                  {34, 168, 132},
                                                  {68, 191, 112},
                                                  {122, 209, 81},
                                                  {189, 223, 38},
                                                  {253, 231, 37}}};
  if (!(t > 0.0f)) return kStops.front();  // also catches NaN
  if (t >= 1.0f) return kStops.back();
  const float pos = t * static_cast<float>(kStops.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const float f = pos - static_cast<float>(i);
  const auto mix = [f](std::uint8_t a, std::uint8_t b) {
    return static_cast<std::uint8_t>(std::lround(a + f * (static_cast<float>(b) - a)));
  };
  const Rgb a = kStops[i], b = kStops[i + 1];
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

}  // namespace tinygpt::plot
