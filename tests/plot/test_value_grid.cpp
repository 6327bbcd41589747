// The value grid: panels of numbers as cells on one scale.
#include <catch2/catch.hpp>

#include "plot/png_test_helpers.hpp"
#include "tinygpt/plot/value_grid.hpp"

using namespace tinygpt;

TEST_CASE("value grid: panels side by side on one scale, bad shapes refused", "[plot]") {
  testing::ScratchDir dir;
  const std::string path = dir.file("grid.png");
  const std::vector<plot::ValuePanel> panels = {{"A", {{0.0, 1.0}, {0.5, 0.25}}},
                                                {"B", {{1.0, 0.0}, {0.0, 0.0}}}};
  plot::save_value_grid(path, panels, {"r0", "r1"}, {"c0", "c1"}, "title", 0.0, 1.0);
  const testing::Png png = testing::read_png(path);
  CHECK(png.width > 200);
  const int bright = png.count(0, 0, png.width, png.height, [](plot::Rgb c) {
    return testing::luminance(c) > 180 && c.b < 100;  // viridis' yellow end
  });
  CHECK(bright > 100);
  CHECK_THROWS_AS(plot::save_value_grid(path, panels, {"r0"}, {"c0", "c1"}, "t", 0.0, 1.0), ShapeError);
  CHECK_THROWS_AS(plot::save_value_grid(path, panels, {"r0", "r1"}, {"c0", "c1"}, "t", 1.0, 1.0), ValueError);
  CHECK_THROWS_AS(plot::save_value_grid(path, {}, {"r0"}, {"c0"}, "t", 0.0, 1.0), ValueError);
  testing::check_unwritable_path([&](const std::string& p) {
    plot::save_value_grid(p, panels, {"r0", "r1"}, {"c0", "c1"}, "t", 0.0, 1.0);
  });
}
