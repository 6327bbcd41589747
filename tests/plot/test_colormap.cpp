#include <cmath>

#include "png_test_helpers.hpp"
#include "tinygpt/plot/colormap.hpp"

using namespace tinygpt::plot;
using tinygpt::testing::luminance;

TEST_CASE("viridis runs from dark purple at 0 to bright yellow at 1, brightening steadily",
          "[plot][colormap]") {
  CHECK(viridis(0.0f) == Rgb{68, 1, 84});
  CHECK(viridis(1.0f) == Rgb{253, 231, 37});
  CHECK(viridis(-3.0f) == viridis(0.0f));
  CHECK(viridis(7.0f) == viridis(1.0f));
  CHECK(viridis(std::nanf("")) == viridis(0.0f));
  int previous = -1;
  for (int i = 0; i <= 100; ++i) {
    const int lum = luminance(viridis(static_cast<float>(i) / 100.0f));
    CHECK(lum >= previous);
    previous = lum;
  }
}
