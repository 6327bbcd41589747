#include <cmath>
#include <filesystem>
#include <limits>

#include "png_test_helpers.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/attention_plot.hpp"
#include "tinygpt/plot/colormap.hpp"

using namespace tinygpt::plot;
using tinygpt::testing::check_unwritable_path;
using tinygpt::testing::luminance;
using tinygpt::testing::Png;
using tinygpt::testing::read_png;
using tinygpt::testing::ScratchDir;

namespace {

std::vector<std::string> char_labels(const std::string& text) {
  std::vector<std::string> labels;
  for (const char c : text) labels.emplace_back(1, c);
  return labels;
}

// Row q puts all its weight on key `target(q)`.
template <typename Target>
std::vector<float> one_hot_rows(int n, Target target) {
  std::vector<float> w(static_cast<std::size_t>(n) * n, 0.0f);
  for (int q = 0; q < n; ++q) w[static_cast<std::size_t>(q) * n + target(q)] = 1.0f;
  return w;
}

std::vector<float> previous_token(int n) {
  return one_hot_rows(n, [](int q) { return q == 0 ? 0 : q - 1; });
}

Rgb cell_center(const Png& png, const PixelRect& grid, int cell, int q, int k) {
  return png.at(grid.x + k * cell + cell / 2, grid.y + q * cell + cell / 2);
}

// Every cell's centre is bright where the weight is 1 and dark where it is 0.
void check_cells(const Png& png, const PixelRect& grid, int cell, const std::vector<float>& w,
                 int n) {
  for (int q = 0; q < n; ++q) {
    for (int k = 0; k < n; ++k) {
      const int lum = luminance(cell_center(png, grid, cell, q, k));
      INFO("query " << q << " key " << k << " luminance " << lum);
      if (w[static_cast<std::size_t>(q) * n + k] == 1.0f) {
        REQUIRE(lum > 180);
      } else {
        REQUIRE(lum < 60);
      }
    }
  }
}

// A heatmap saved and read back, with the layout that says where its parts are.
struct RenderedHeatmap {
  Png png;
  AttentionFigureLayout layout;
};

RenderedHeatmap render_heatmap(const ScratchDir& dir, const std::vector<float>& w,
                               const std::vector<std::string>& labels, const std::string& title) {
  const int n = static_cast<int>(labels.size());
  save_attention_heatmap(dir.file("h.png"), w.data(), n, labels, title);
  RenderedHeatmap out{read_png(dir.file("h.png")), attention_heatmap_layout(n, labels, title)};
  REQUIRE(out.png.width == out.layout.width);
  REQUIRE(out.png.height == out.layout.height);
  REQUIRE(out.layout.grids.size() == 1);
  return out;
}

bool is_background(Rgb c) { return c == Rgb{255, 255, 255}; }

const std::string kText = "the cat sat on the mat.\n";  // 24 characters

}  // namespace

TEST_CASE("attention heatmap: image size matches its layout and weights 1/0 are bright/dark",
          "[plot][heatmap]") {
  ScratchDir dir;
  const int n = 24;
  const auto labels = char_labels(kText);
  const auto w = previous_token(n);
  const auto [png, layout] = render_heatmap(dir, w, labels, "layer 0 head 2: previous 0.93");
  const PixelRect grid = layout.grids[0];
  CHECK(grid.width == n * layout.cell);
  CHECK(grid.height == n * layout.cell);
  CHECK(grid.x + grid.width <= png.width);
  CHECK(grid.y + grid.height <= png.height);
  check_cells(png, grid, layout.cell, w, n);
  // Exactly the colours of the map's ends.
  CHECK(cell_center(png, grid, layout.cell, 5, 4) == viridis(1.0f));
  CHECK(cell_center(png, grid, layout.cell, 5, 9) == viridis(0.0f));
}

TEST_CASE("attention heatmap: colour bar runs from bright at the top to dark at the bottom",
          "[plot][heatmap]") {
  ScratchDir dir;
  const int n = 10;
  const auto [png, layout] =
      render_heatmap(dir, previous_token(n), char_labels("0123456789"), "bar");
  const PixelRect bar = layout.colorbar;
  REQUIRE(bar.width > 4);
  REQUIRE(bar.height == layout.grids[0].height);
  CHECK(bar.x > layout.grids[0].x + layout.grids[0].width);  // right of the grid
  CHECK(bar.x + bar.width <= png.width);
  const int mid_x = bar.x + bar.width / 2;
  CHECK(png.at(mid_x, bar.y) == viridis(1.0f));
  CHECK(png.at(mid_x, bar.y + bar.height - 1) == viridis(0.0f));
  int previous = 256;
  for (int y = bar.y; y < bar.y + bar.height; ++y) {
    const int lum = luminance(png.at(mid_x, y));
    REQUIRE(lum <= previous);
    previous = lum;
  }
  // Tick labels stand right of the bar.
  CHECK(png.count(bar.x + bar.width + 2, bar.y - 8, png.width, bar.y + bar.height + 8,
                  [](Rgb c) { return !is_background(c); }) > 20);
}

TEST_CASE("attention heatmap: every query row and key column gets a label", "[plot][heatmap]") {
  ScratchDir dir;
  const int n = 24;
  const auto [png, layout] = render_heatmap(dir, previous_token(n), char_labels(kText), "labels");
  const PixelRect grid = layout.grids[0];
  const int c = layout.cell;
  const auto ink = [](Rgb px) { return !is_background(px); };
  for (int i = 0; i < n; ++i) {
    INFO("position " << i);
    // Queries: the 20 pixels left of row i. Keys: the 24 pixels above column i. (The axis names
    // stand farther out.)
    CHECK(png.count(grid.x - 20, grid.y + i * c, grid.x, grid.y + (i + 1) * c, ink) > 0);
    CHECK(png.count(grid.x + i * c, grid.y - 24, grid.x + (i + 1) * c, grid.y, ink) > 0);
  }
}

TEST_CASE("attention heatmap: 128 positions keep labelled cells in a bounded image",
          "[plot][heatmap]") {
  std::vector<std::string> labels;
  for (int i = 0; i < 128; ++i) labels.push_back(std::string(1, static_cast<char>('a' + i % 26)));
  const auto layout = attention_heatmap_layout(128, labels, "T = 128");
  CHECK(layout.cell >= 8);
  CHECK(layout.width <= 1400);
  CHECK(layout.height <= 1400);
  const auto small = attention_heatmap_layout(3, {"a", "b", "c"}, "T = 3");
  CHECK(small.cell >= 16);  // few positions get big cells
}

TEST_CASE("attention heatmap: a NaN weight is drawn red, not as a valid colour",
          "[plot][heatmap]") {
  ScratchDir dir;
  const std::vector<float> w = {1.0f, 0.0f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
  const auto [png, layout] = render_heatmap(dir, w, {"a", "b"}, "nan");
  const Rgb bad = cell_center(png, layout.grids[0], layout.cell, 1, 0);
  CHECK(bad.r > 200);
  CHECK(bad.g < 60);
}

TEST_CASE("attention heatmap: bad arguments throw and write nothing", "[plot][heatmap]") {
  ScratchDir dir;
  const std::vector<float> w(4, 0.25f);
  const std::string path = dir.file("h.png");
  CHECK_THROWS_AS(save_attention_heatmap(path, w.data(), 2, {"a"}, "t"), tinygpt::ShapeError);
  CHECK_THROWS_AS(save_attention_heatmap(path, nullptr, 2, {"a", "b"}, "t"), tinygpt::ValueError);
  CHECK_THROWS_AS(save_attention_heatmap(path, w.data(), 0, {}, "t"), tinygpt::ValueError);
  CHECK_THROWS_AS(
      attention_heatmap_layout(kMaxPlotPositions + 1,
                               std::vector<std::string>(kMaxPlotPositions + 1, "x"), "t"),
      tinygpt::ValueError);
  CHECK(dir.entries().empty());
}

TEST_CASE("attention heatmap: an unwritable path throws Error naming it and leaves no file",
          "[plot][heatmap]") {
  const std::vector<float> w = {1.0f, 0.0f, 0.5f, 0.5f};
  check_unwritable_path([&w](const std::string& path) {
    save_attention_heatmap(path, w.data(), 2, {"a", "b"}, "t");
  });
}

TEST_CASE("head grid: each head's grid shows its own pattern, one colour bar for all",
          "[plot][heads]") {
  ScratchDir dir;
  const int n = 12;
  const auto labels = char_labels("to be or not");
  // Head h attends to key h % n from every query: a bright column that differs per head.
  std::vector<std::vector<float>> heads;
  std::vector<std::string> titles;
  for (int h = 0; h < 6; ++h) {
    heads.push_back(one_hot_rows(n, [h](int) { return h; }));
    titles.push_back("head " + std::to_string(h));
  }
  save_head_grid(dir.file("g.png"), heads, n, labels, titles, "layer 1");
  const auto layout = head_grid_layout(n, labels, titles, "layer 1");
  const auto png = read_png(dir.file("g.png"));
  REQUIRE(png.width == layout.width);
  REQUIRE(png.height == layout.height);
  REQUIRE(layout.grids.size() == 6);
  for (int h = 0; h < 6; ++h) {
    INFO("head " << h);
    check_cells(png, layout.grids[static_cast<std::size_t>(h)], layout.cell,
                heads[static_cast<std::size_t>(h)], n);
  }
  // Six heads make two even rows of three; the bar spans from the first to the last row.
  CHECK(layout.grids[0].y == layout.grids[2].y);
  CHECK(layout.grids[3].y > layout.grids[0].y + layout.grids[0].height);
  CHECK(layout.grids[3].x == layout.grids[0].x);
  CHECK(layout.colorbar.y == layout.grids[0].y);
  CHECK(layout.colorbar.y + layout.colorbar.height == layout.grids[5].y + layout.grids[5].height);
  CHECK(png.at(layout.colorbar.x + 2, layout.colorbar.y) == viridis(1.0f));
}

TEST_CASE("head grid: four heads stand side by side in one row", "[plot][heads]") {
  const auto labels = char_labels("abcdefgh");
  const auto layout = head_grid_layout(8, labels, {"h0", "h1", "h2", "h3"}, "layer 0");
  REQUIRE(layout.grids.size() == 4);
  for (std::size_t h = 1; h < 4; ++h) {
    CHECK(layout.grids[h].y == layout.grids[0].y);
    CHECK(layout.grids[h].x > layout.grids[h - 1].x + layout.grids[h - 1].width);
  }
  CHECK(layout.colorbar.x > layout.grids[3].x + layout.grids[3].width);
}

TEST_CASE("head grid: mismatched heads, titles or matrix sizes throw ShapeError", "[plot][heads]") {
  ScratchDir dir;
  const std::string path = dir.file("g.png");
  const std::vector<float> ok(4, 0.5f);
  CHECK_THROWS_AS(save_head_grid(path, {}, 2, {"a", "b"}, {}, "t"), tinygpt::ShapeError);
  CHECK_THROWS_AS(save_head_grid(path, {ok, ok}, 2, {"a", "b"}, {"only one"}, "t"),
                  tinygpt::ShapeError);
  CHECK_THROWS_AS(save_head_grid(path, {ok, std::vector<float>(3)}, 2, {"a", "b"}, {"x", "y"}, "t"),
                  tinygpt::ShapeError);
  CHECK_THROWS_AS(save_head_grid(path, {ok}, 2, {"a"}, {"x"}, "t"), tinygpt::ShapeError);
  CHECK(dir.entries().empty());
}

TEST_CASE("cross-attention grid: target positions down, source positions across", "[plot][heads][cross]") {
  ScratchDir dir;
  const auto source = char_labels("abcdefghi");  // 9 keys
  const auto target = char_labels("ihgfe");      // 5 queries
  // Head 0 reads the mirrored source position, head 1 always the first one.
  std::vector<float> mirror(5 * 9, 0.0f), first(5 * 9, 0.0f);
  for (int q = 0; q < 5; ++q) {
    mirror[static_cast<std::size_t>(q) * 9 + (8 - q)] = 1.0f;
    first[static_cast<std::size_t>(q) * 9] = 1.0f;
  }
  const std::vector<std::string> titles{"head 0", "head 1"};
  save_cross_attention_grid(dir.file("c.png"), {mirror, first}, target, source, titles, "layer 1");
  const auto layout = cross_attention_grid_layout(target, source, titles, "layer 1");
  const auto png = read_png(dir.file("c.png"));
  REQUIRE(png.width == layout.width);
  REQUIRE(png.height == layout.height);
  REQUIRE(layout.grids.size() == 2);
  CHECK(layout.grids[0].width == 9 * layout.cell);
  CHECK(layout.grids[0].height == 5 * layout.cell);
  for (size_t h = 0; h < 2; ++h) {
    const std::vector<float>& w = h == 0 ? mirror : first;
    for (int q = 0; q < 5; ++q) {
      for (int k = 0; k < 9; ++k) {
        INFO("head " << h << " query " << q << " key " << k);
        const int lum = luminance(cell_center(png, layout.grids[h], layout.cell, q, k));
        if (w[static_cast<std::size_t>(q) * 9 + k] == 1.0f) {
          REQUIRE(lum > 180);
        } else {
          REQUIRE(lum < 60);
        }
      }
    }
  }
  // 45 weights are not 4 queries x 9 keys.
  CHECK_THROWS_AS(save_cross_attention_grid(dir.file("d.png"), {mirror}, char_labels("ihgf"), source,
                                            {"h"}, "t"),
                  tinygpt::ShapeError);
  CHECK_FALSE(std::filesystem::exists(dir.file("d.png")));
}
