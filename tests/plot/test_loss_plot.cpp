#include <cmath>
#include <filesystem>
#include <limits>

#include "png_test_helpers.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/axis_ticks.hpp"
#include "tinygpt/plot/attribution_plot.hpp"
#include "tinygpt/plot/formation_plot.hpp"
#include "tinygpt/plot/loss_plot.hpp"

using namespace tinygpt::plot;
using tinygpt::testing::check_unwritable_path;
using tinygpt::testing::Png;
using tinygpt::testing::read_png;
using tinygpt::testing::ScratchDir;

namespace {

int pixels_of(const Png& png, Rgb color) {
  return png.count(0, 0, png.width, png.height, [color](Rgb c) { return c == color; });
}

std::vector<LossPoint> falling_curve(int points, int every) {
  std::vector<LossPoint> out;
  for (int i = 0; i < points; ++i) {
    out.push_back({static_cast<double>(i * every), 1.5 + 2.7 * std::exp(-i / 20.0)});
  }
  return out;
}

}  // namespace

TEST_CASE("loss curve: draws both series in their colours", "[plot][loss]") {
  ScratchDir dir;
  save_loss_curve(dir.file("loss.png"), falling_curve(200, 10), falling_curve(11, 200), "loss");
  const auto png = read_png(dir.file("loss.png"));
  CHECK(png.width >= 640);
  CHECK(png.height >= 400);
  CHECK(pixels_of(png, kTrainLossColor) > 500);  // a 2-pixel line across the plot
  CHECK(pixels_of(png, kValLossColor) > 100);
}

TEST_CASE("loss curve: the train line falls from the top-left towards the bottom-right",
          "[plot][loss]") {
  ScratchDir dir;
  save_loss_curve(dir.file("loss.png"), falling_curve(100, 10), {}, "falling");
  const auto png = read_png(dir.file("loss.png"));
  // Mean row of train pixels in the left and right thirds of the image.
  const auto mean_row = [&png](int x0, int x1) {
    long sum = 0, n = 0;
    for (int y = 0; y < png.height; ++y) {
      for (int x = x0; x < x1; ++x) {
        if (png.at(x, y) == kTrainLossColor) {
          sum += y;
          ++n;
        }
      }
    }
    REQUIRE(n > 0);
    return static_cast<double>(sum) / static_cast<double>(n);
  };
  CHECK(mean_row(0, png.width / 3) < mean_row(2 * png.width / 3, png.width));
}

TEST_CASE("loss curve: an empty val series leaves no val colour, not even in the legend",
          "[plot][loss]") {
  ScratchDir dir;
  save_loss_curve(dir.file("loss.png"), falling_curve(50, 1), {}, "train only");
  const auto png = read_png(dir.file("loss.png"));
  CHECK(pixels_of(png, kTrainLossColor) > 0);
  CHECK(pixels_of(png, kValLossColor) == 0);
}

TEST_CASE("loss curve: a single point still shows as a marker", "[plot][loss]") {
  ScratchDir dir;
  save_loss_curve(dir.file("one.png"), {{0.0, 4.17}}, {}, "one point");
  const auto png = read_png(dir.file("one.png"));
  // The legend's sample holds some; the marker in the plot adds a square of them.
  ScratchDir empty_dir;
  save_loss_curve(empty_dir.file("none.png"), {}, {}, "no points");
  CHECK(pixels_of(png, kTrainLossColor) >= 2 * 28);
  CHECK(pixels_of(read_png(empty_dir.file("none.png")), kTrainLossColor) == 0);
}

TEST_CASE("loss curve: non-finite points are skipped, not drawn or thrown on", "[plot][loss]") {
  ScratchDir dir;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto train = falling_curve(30, 1);
  train[10].loss = nan;
  train[20].loss = inf;
  train.push_back({nan, 1.0});
  CHECK_NOTHROW(save_loss_curve(dir.file("loss.png"), train, {{5.0, nan}}, "gaps"));
  CHECK(pixels_of(read_png(dir.file("loss.png")), kTrainLossColor) > 0);
}

TEST_CASE("loss curve: an unwritable path throws Error naming it and leaves no file",
          "[plot][loss]") {
  check_unwritable_path(
      [](const std::string& path) { save_loss_curve(path, falling_curve(5, 1), {}, "t"); });
}

TEST_CASE("nice_ticks picks the finest 1-2-5 step within the tick budget", "[plot][ticks]") {
  const auto steps = nice_ticks(-40.0, 2040.0, 8);
  CHECK(steps.step == 500.0);
  CHECK(steps.values == std::vector<double>{0.0, 500.0, 1000.0, 1500.0, 2000.0});

  const auto losses = nice_ticks(1.1, 4.4, 7);
  CHECK(losses.step == Approx(0.5));
  REQUIRE(losses.values.size() == 6);
  CHECK(losses.values.front() == Approx(1.5));
  CHECK(losses.values.back() == Approx(4.0));

  for (const auto& [lo, hi] : {std::pair{0.013, 0.0171}, {-3.0, 7.0}, {1e5, 3e6}, {0.0, 1.0}}) {
    for (int max_ticks = 2; max_ticks <= 10; ++max_ticks) {
      const auto t = nice_ticks(lo, hi, max_ticks);
      INFO(lo << " " << hi << " " << max_ticks);
      CHECK(!t.values.empty());
      CHECK(static_cast<int>(t.values.size()) <= max_ticks);
      CHECK(t.values.front() >= lo);
      CHECK(t.values.back() <= hi);
    }
  }
}

TEST_CASE("nice_ticks keeps to whole numbers given min_step 1", "[plot][ticks]") {
  const auto t = nice_ticks(-1.0, 1.0, 8, 1.0);
  CHECK(t.values == std::vector<double>{-1.0, 0.0, 1.0});
  CHECK_THROWS_AS(nice_ticks(1.0, 1.0, 5), tinygpt::ValueError);
  CHECK_THROWS_AS(nice_ticks(0.0, 1.0, 1), tinygpt::ValueError);
}

TEST_CASE("format_tick shows the decimals the step needs and never -0", "[plot][ticks]") {
  CHECK(format_tick(2000.0, 500.0) == "2000");
  CHECK(format_tick(1.5, 0.5) == "1.5");
  CHECK(format_tick(2.0, 0.5) == "2.0");
  CHECK(format_tick(0.015, 0.005) == "0.015");
  CHECK(format_tick(-1e-17, 0.1) == "0.0");
}

TEST_CASE("formation plot: loss and score series in their colours on one step axis",
          "[plot][formation]") {
  ScratchDir dir;
  std::vector<LossPoint> train, prev;
  for (int s = 0; s <= 100; s += 10) {
    train.push_back({double(s), 3.0 - s / 50.0});
    prev.push_back({double(s), s / 100.0});
  }
  save_formation_plot(dir.file("f.png"), train, {}, {{"prev", prev}, {"ratio", {}}}, "formation");
  const Png png = read_png(dir.file("f.png"));
  CHECK(pixels_of(png, kTrainLossColor) > 300);
  CHECK(pixels_of(png, score_color(0)) > 300);
  CHECK(pixels_of(png, score_color(1)) == 0);  // an empty series is not even in the legend
}

TEST_CASE("attribution plot: rows of cells, mismatched rows are refused", "[plot][attribution]") {
  ScratchDir dir;
  save_attribution_plot(dir.file("a.png"), {{0.1, 0.9}, {0.5, 0.5}}, {"attn", "grad"}, {"a", "b"}, "t");
  CHECK(read_png(dir.file("a.png")).width > 0);
  CHECK_THROWS_AS(save_attribution_plot(dir.file("b.png"), {{0.1}}, {"attn"}, {"a", "b"}, "t"),
                  tinygpt::ShapeError);
}
