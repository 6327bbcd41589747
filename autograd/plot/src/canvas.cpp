#include "tinygpt/plot/canvas.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <stb_image_write.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tinygpt/autograd/error.hpp"

// stb_easy_font is all static functions, some of which this file does not call.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_easy_font.h>
#pragma GCC diagnostic pop

namespace tinygpt::plot {
namespace {

// One filled rectangle of a glyph, in font pixels.
struct Quad {
  int x0, y0, x1, y1;
};

// The vertex layout stb_easy_font writes: position, then a colour we ignore.
struct FontVertex {
  float x, y, z;
  unsigned char rgba[4];
};

// The densest glyph ('X') takes 11 quads; 16 leaves room.
constexpr std::size_t kMaxQuadsPerChar = 16;

// stb_easy_font indexes its tables with (c - 32), so only printable ASCII may reach it.
std::string printable_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c < 32 || c > 126) c = '?';
  }
  return out;
}

std::vector<Quad> text_quads(std::string_view text) {
  std::string chars = printable_ascii(text);
  std::vector<FontVertex> vertices(4 * kMaxQuadsPerChar * chars.size());
  const int quads = stb_easy_font_print(0, 0, chars.data(), nullptr, vertices.data(),
                                        static_cast<int>(vertices.size() * sizeof(FontVertex)));
  std::vector<Quad> out;
  out.reserve(static_cast<std::size_t>(quads));
  for (int q = 0; q < quads; ++q) {
    // Vertices go around the quad: 0 is its top-left corner, 2 its bottom-right.
    const FontVertex& a = vertices[4 * static_cast<std::size_t>(q)];
    const FontVertex& b = vertices[4 * static_cast<std::size_t>(q) + 2];
    out.push_back({static_cast<int>(a.x), static_cast<int>(a.y), static_cast<int>(b.x),
                   static_cast<int>(b.y)});
  }
  return out;
}

// The right edge of the rightmost quad: the inked width of the text.
int quads_right(const std::vector<Quad>& quads) {
  int right = 0;
  for (const Quad& q : quads) right = std::max(right, q.x1);
  return right;
}

}  // namespace

Canvas::Canvas(int width, int height, Rgb background) : width_(width), height_(height) {
  if (width <= 0 || height <= 0) {
    throw ValueError(Operation("Canvas"), fmt::format("size must be positive, got {}x{}", width, height));
  }
  rgb_.resize(3 * static_cast<std::size_t>(width) * static_cast<std::size_t>(height));
  fill_rect(0, 0, width, height, background);
}

Rgb Canvas::pixel(int x, int y) const {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) {
    throw IndexError(Operation("Canvas::pixel"),
        fmt::format("({}, {}) is outside the {}x{} canvas", x, y, width_, height_));
  }
  const std::uint8_t* p = &rgb_[3 * (static_cast<std::size_t>(y) * width_ + x)];
  return {p[0], p[1], p[2]};
}

void Canvas::fill_rect(int x, int y, int w, int h, Rgb color) {
  const int x0 = std::max(x, 0), x1 = std::min(x + w, width_);
  const int y0 = std::max(y, 0), y1 = std::min(y + h, height_);
  for (int row = y0; row < y1; ++row) {
    std::uint8_t* p = &rgb_[3 * (static_cast<std::size_t>(row) * width_ + x0)];
    for (int col = x0; col < x1; ++col, p += 3) {
      p[0] = color.r;
      p[1] = color.g;
      p[2] = color.b;
    }
  }
}

void Canvas::stroke_rect(int x, int y, int w, int h, Rgb color, int thickness) {
  fill_rect(x, y, w, thickness, color);
  fill_rect(x, y + h - thickness, w, thickness, color);
  fill_rect(x, y, thickness, h, color);
  fill_rect(x + w - thickness, y, thickness, h, color);
}

void Canvas::draw_line(int x0, int y0, int x1, int y1, Rgb color, int thickness) {
  // Bresenham, stamping a square pen centred on each pixel of the line.
  const int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
  const int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
  const int half = thickness / 2;
  int err = dx + dy;
  for (;;) {
    fill_rect(x0 - half, y0 - half, thickness, thickness, color);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

void Canvas::draw_text(int x, int y, std::string_view text, Rgb color, int scale,
                       TextDirection direction) {
  const std::vector<Quad> quads = text_quads(text);
  const int text_width = quads_right(quads) * scale;
  for (const Quad& q : quads) {
    if (direction == TextDirection::horizontal) {
      fill_rect(x + q.x0 * scale, y + q.y0 * scale, (q.x1 - q.x0) * scale, (q.y1 - q.y0) * scale,
                color);
    } else {
      // Turned counter-clockwise: the font's y runs along screen x, its x up the screen.
      fill_rect(x + q.y0 * scale, y + text_width - q.x1 * scale, (q.y1 - q.y0) * scale,
                (q.x1 - q.x0) * scale, color);
    }
  }
}

void Canvas::save_png(const std::string& path) const {
  // stbi_write_png ignores the results of fwrite and fclose, so on a full disk it reported
  // success for a truncated image: the PNG is encoded into memory and written here, every call
  // checked.
  std::string png;
  const auto append = [](void* out, void* data, int size) {
    static_cast<std::string*>(out)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (stbi_write_png_to_func(append, &png, width_, height_, 3, rgb_.data(), 3 * width_) == 0) {
    throw Error(Operation("save_png"), fmt::format("cannot encode '{}'", path));
  }
  const std::string temp = path + ".tmp";
  const auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    throw Error(Operation("save_png"), fmt::format("cannot {} '{}': {}", what, path, reason));
  };
  errno = 0;
  // Not through a symbolic link planted as the temporary; the rename then replaces a link at
  // `path` itself, never its target.
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  std::FILE* file = fd < 0 ? nullptr : ::fdopen(fd, "wb");
  if (file == nullptr) {
    if (fd >= 0) ::close(fd);
    fail("write");
  }
  const bool written = std::fwrite(png.data(), 1, png.size(), file) == png.size() && std::fflush(file) == 0 &&
                       ::fsync(::fileno(file)) == 0;
  if (std::fclose(file) != 0 || !written) fail("write");
  if (std::rename(temp.c_str(), path.c_str()) != 0) fail("move the image into");
}

TextSize text_size(std::string_view text, int scale) {
  // The height is that of capitals whatever the text holds, so lines of text align.
  return {quads_right(text_quads(text)) * scale, text.empty() ? 0 : text_cap_height(scale)};
}

}  // namespace tinygpt::plot
