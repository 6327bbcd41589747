#pragma once
// Shared by the plot tests: PNGs read back with stb_image.
#include <stb_image.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "scratch_dir.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/canvas.hpp"

namespace tinygpt::testing {

struct Png {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;

  plot::Rgb at(int x, int y) const {
    const std::size_t i = 3 * (static_cast<std::size_t>(y) * width + x);
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
  // How many pixels inside [x0, x1) x [y0, y1) satisfy `pred`.
  template <typename Pred>
  int count(int x0, int y0, int x1, int y1, Pred pred) const {
    int n = 0;
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) n += pred(at(x, y)) ? 1 : 0;
    }
    return n;
  }
};

inline Png read_png(const std::string& path) {
  int width = 0, height = 0, channels = 0;
  stbi_uc* data = stbi_load(path.c_str(), &width, &height, &channels, 3);
  INFO(path);
  REQUIRE(data != nullptr);
  Png png{width, height, std::vector<std::uint8_t>(data, data + 3 * width * height)};
  stbi_image_free(data);
  return png;
}

// Perceived brightness, 0 to 255 (Rec. 601 weights).
inline int luminance(plot::Rgb c) { return (299 * c.r + 587 * c.g + 114 * c.b) / 1000; }

// save(path) for a path inside a directory that does not exist (the tests run as root, so
// permissions would not stop them) must throw tinygpt::Error naming the path and write nothing.
template <typename Save>
void check_unwritable_path(Save save) {
  ScratchDir dir;
  const std::string path = dir.file("missing/plot.png");
  try {
    save(path);
    FAIL("no exception");
  } catch (const tinygpt::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(path));
  }
  CHECK(dir.entries().empty());
}

}  // namespace tinygpt::testing
