#include <algorithm>
#include <filesystem>

#include "io/file_size_limit.hpp"
#include "png_test_helpers.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/canvas.hpp"

using namespace tinygpt::plot;
using tinygpt::testing::check_unwritable_path;
using tinygpt::testing::read_png;
using tinygpt::testing::ScratchDir;

namespace {
constexpr Rgb kWhite{255, 255, 255};
constexpr Rgb kRed{200, 0, 0};
}  // namespace

TEST_CASE("Canvas fill_rect colours exactly the rectangle and clips at the edges",
          "[plot][canvas]") {
  Canvas canvas(10, 8, kWhite);
  canvas.fill_rect(2, 3, 4, 2, kRed);
  canvas.fill_rect(8, 6, 50, 50, kRed);  // runs off the bottom-right corner
  int red = 0;
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 10; ++x) red += canvas.pixel(x, y) == kRed ? 1 : 0;
  }
  CHECK(red == 4 * 2 + 2 * 2);
  CHECK(canvas.pixel(2, 3) == kRed);
  CHECK(canvas.pixel(5, 4) == kRed);
  CHECK(canvas.pixel(6, 4) == kWhite);
  CHECK(canvas.pixel(9, 7) == kRed);
  CHECK_THROWS_AS(canvas.pixel(10, 0), tinygpt::IndexError);
}

TEST_CASE("Canvas draw_line joins both end points", "[plot][canvas]") {
  Canvas canvas(20, 20, kWhite);
  canvas.draw_line(2, 17, 15, 3, kRed);
  CHECK(canvas.pixel(2, 17) == kRed);
  CHECK(canvas.pixel(15, 3) == kRed);
  // One pixel per column of this mostly horizontal line, no gaps.
  for (int x = 2; x <= 15; ++x) {
    int in_column = 0;
    for (int y = 0; y < 20; ++y) in_column += canvas.pixel(x, y) == kRed ? 1 : 0;
    CHECK(in_column >= 1);
  }
}

TEST_CASE("Canvas draw_text inks inside the box text_size gives, larger at a larger scale",
          "[plot][canvas]") {
  for (const int scale : {1, 2, 3}) {
    Canvas canvas(200, 60, kWhite);
    const TextSize size = text_size("Head 2", scale);
    canvas.draw_text(10, 10, "Head 2", kRed, scale);
    int inside = 0, outside = 0, left = 1 << 30, right = -1;
    for (int y = 0; y < 60; ++y) {
      for (int x = 0; x < 200; ++x) {
        if (canvas.pixel(x, y) != kRed) continue;
        const bool in_box = x >= 10 && x < 10 + size.width && y >= 10 && y < 10 + size.height;
        (in_box ? inside : outside) += 1;
        left = std::min(left, x);
        right = std::max(right, x);
      }
    }
    INFO("scale " << scale);
    CHECK(inside > 0);
    CHECK(outside == 0);  // no descenders in "Head 2"
    CHECK(left == 10);
    CHECK(right == 10 + size.width - 1);
    CHECK(size.height == 7 * scale);
  }
}

TEST_CASE("Canvas draw_text vertical turns the text box a quarter turn", "[plot][canvas]") {
  Canvas canvas(60, 100, kWhite);
  const TextSize size = text_size("loss", 2);
  canvas.draw_text(5, 5, "loss", kRed, 2, TextDirection::vertical);
  int top = 1 << 30, bottom = -1, widest_x = -1;
  for (int y = 0; y < 100; ++y) {
    for (int x = 0; x < 60; ++x) {
      if (canvas.pixel(x, y) != kRed) continue;
      top = std::min(top, y);
      bottom = std::max(bottom, y);
      widest_x = std::max(widest_x, x);
    }
  }
  CHECK(top == 5);
  CHECK(bottom == 5 + size.width - 1);
  CHECK(widest_x < 5 + size.height);
}

TEST_CASE("Canvas draw_text shows characters outside printable ASCII as '?'", "[plot][canvas]") {
  Canvas with_tab(40, 20, kWhite), with_question(40, 20, kWhite);
  with_tab.draw_text(2, 2, "a\tb", kRed);
  with_question.draw_text(2, 2, "a?b", kRed);
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 40; ++x) REQUIRE(with_tab.pixel(x, y) == with_question.pixel(x, y));
  }
}

TEST_CASE("Canvas save_png writes a PNG that stb_image reads back pixel for pixel",
          "[plot][canvas]") {
  ScratchDir dir;
  Canvas canvas(7, 5, kWhite);
  canvas.fill_rect(1, 1, 3, 2, kRed);
  canvas.save_png(dir.file("small.png"));
  const auto png = read_png(dir.file("small.png"));
  REQUIRE(png.width == 7);
  REQUIRE(png.height == 5);
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) CHECK(png.at(x, y) == canvas.pixel(x, y));
  }
  CHECK(dir.entries() == std::set<std::string>{"small.png"});  // no temporary left behind
}

TEST_CASE("Canvas save_png over an existing file replaces it", "[plot][canvas]") {
  ScratchDir dir;
  Canvas(4, 4, kWhite).save_png(dir.file("a.png"));
  Canvas(6, 3, kRed).save_png(dir.file("a.png"));
  const auto png = read_png(dir.file("a.png"));
  CHECK(png.width == 6);
  CHECK(png.at(0, 0) == kRed);
  CHECK(dir.entries().size() == 1);
}

TEST_CASE("Canvas save_png into a missing directory throws Error naming the path, writes nothing",
          "[plot][canvas]") {
  check_unwritable_path([](const std::string& path) { Canvas(4, 4, kWhite).save_png(path); });
}

TEST_CASE("Canvas save_png onto a directory throws and removes its temporary file",
          "[plot][canvas]") {
  ScratchDir dir;
  std::filesystem::create_directory(dir.file("taken"));
  CHECK_THROWS_AS(Canvas(4, 4, kWhite).save_png(dir.file("taken")), tinygpt::Error);
  CHECK(dir.entries() == std::set<std::string>{"taken"});
}

TEST_CASE("Canvas save_png reports a write that fails, leaving no file", "[plot][canvas]") {
  tinygpt::testing::ScratchDir dir;
  const tinygpt::plot::Canvas canvas(64, 64, {255, 255, 255});
  CHECK_THROWS_WITH(canvas.save_png(dir.file("missing/x.png")),
                    Catch::Matchers::Contains("cannot write") && Catch::Matchers::Contains("x.png"));
  {
    tinygpt::testing::FileSizeLimit limit(40);  // a full disk, as far as this process can tell
    CHECK_THROWS_WITH(canvas.save_png(dir.file("x.png")), Catch::Matchers::Contains("cannot write"));
  }
  CHECK(dir.entries().empty());
}
