#pragma once
// A minimal RGB raster for the plots: filled rectangles, lines, stb_easy_font text, PNG output.
// Every drawing call clips to the canvas, so layout code may draw partly outside it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinygpt::plot {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }
  friend bool operator!=(Rgb a, Rgb b) { return !(a == b); }
};

// An axis-aligned rectangle of pixels: columns [x, x + width), rows [y, y + height).
struct PixelRect {
  int x = 0, y = 0, width = 0, height = 0;
};

// Horizontal text reads left to right; vertical text is turned a quarter counter-clockwise and
// reads bottom to top, as on the y axis of most plots.
enum class TextDirection { horizontal, vertical };

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  Rgb pixel(int x, int y) const;

  void fill_rect(int x, int y, int w, int h, Rgb color);
  // The outline of the rectangle [x, x+w) x [y, y+h), `thickness` pixels inside it.
  void stroke_rect(int x, int y, int w, int h, Rgb color, int thickness = 1);
  // A straight line between two pixel centres, drawn with a square pen `thickness` pixels wide.
  void draw_line(int x0, int y0, int x1, int y1, Rgb color, int thickness = 1);
  // Text in stb_easy_font's bitmap font, each font pixel drawn as a scale x scale square.
  // (x, y) is the top-left corner of the text's box (text_size). Characters outside printable
  // ASCII are drawn as '?'; the text is a single line.
  void draw_text(int x, int y, std::string_view text, Rgb color, int scale = 1,
                 TextDirection direction = TextDirection::horizontal);

  // Writes the canvas as an 8-bit RGB PNG. The image goes to a temporary file beside `path` that
  // is renamed over it, so a failed save leaves no partial PNG; failures throw tinygpt::Error
  // naming the path.
  void save_png(const std::string& path) const;

 private:
  int width_;
  int height_;
  std::vector<std::uint8_t> rgb_;  // row-major, 3 bytes a pixel
};

// The inked extent of horizontal text: width from the left edge to the right edge of the last
// glyph, height from the top of capitals to the baseline (descenders of g, j, p, q, y and commas
// reach 2 * scale further down). Vertical text swaps the two.
struct TextSize {
  int width = 0;
  int height = 0;
};
TextSize text_size(std::string_view text, int scale = 1);

// Font metrics at a scale: the height of capitals, the space below the baseline that descenders
// take, and the height of a line of text with both.
inline int text_cap_height(int scale) { return 7 * scale; }
inline int text_descent(int scale) { return 2 * scale; }
inline int text_line_height(int scale) { return text_cap_height(scale) + text_descent(scale); }

}  // namespace tinygpt::plot
