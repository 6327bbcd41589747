#include "tinygpt/plot/terminal_heatmap.hpp"

#include <fmt/format.h>

#include <sys/ioctl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "attention_input.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/attention_plot.hpp"
#include "tinygpt/plot/colormap.hpp"
#include "tinygpt/plot/token_label.hpp"

namespace tinygpt::plot {
namespace {

constexpr std::size_t kMaxLabelChars = 6;
constexpr int kAnsiInvalid = 196;  // bright red, for NaN or infinite weights
constexpr const char* kAnsiReset = "\x1b[0m";

// The nearest colour of xterm's 6x6x6 colour cube (indices 16 to 231).
int ansi256(Rgb c) {
  const auto level = [](std::uint8_t v) {
    static constexpr int kLevels[6] = {0, 95, 135, 175, 215, 255};
    int best = 0;
    for (int i = 1; i < 6; ++i) {
      if (std::abs(kLevels[i] - v) < std::abs(kLevels[best] - v)) best = i;
    }
    return best;
  };
  return 16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b);
}

char ramp_char(float w) {
  if (!std::isfinite(w)) return '?';
  const int levels = static_cast<int>(std::strlen(kAsciiRamp));
  return kAsciiRamp[std::clamp(static_cast<int>(w * levels), 0, levels - 1)];
}

std::string ansi_cell(float w, int cell_width) {
  const int code = std::isfinite(w) ? ansi256(viridis(w)) : kAnsiInvalid;
  return fmt::format("\x1b[48;5;{}m{}", code,
                     std::string(static_cast<std::size_t>(cell_width), ' '));
}

std::string ascii_cell(float w, int cell_width) {
  return std::string(static_cast<std::size_t>(cell_width), ramp_char(w));
}

// The scale line: the ten shades from 0 to 1.
std::string legend(bool color, int cell_width) {
  std::string shades;
  const int levels = static_cast<int>(std::strlen(kAsciiRamp));
  for (int i = 0; i < levels; ++i) {
    const float w = (static_cast<float>(i) + 0.5f) / static_cast<float>(levels);
    shades += color ? ansi_cell(w, cell_width) : ascii_cell(w, cell_width);
  }
  if (color) shades += kAnsiReset;
  return fmt::format("scale: 0 [{}] 1\n", shades);
}

}  // namespace

int terminal_columns(int fd) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  const char* env = std::getenv("COLUMNS");
  const int columns = env != nullptr ? std::atoi(env) : 0;
  return columns > 0 ? columns : kTerminalColumns;
}

std::string terminal_heatmap(const float* weights, int seq_len,
                             const std::vector<std::string>& labels, bool color, int columns) {
  check_positions("terminal_heatmap", seq_len, labels, kMaxPlotPositions);
  if (columns < 8) {
    throw tinygpt::ValueError(Operation("terminal_heatmap"),
                              fmt::format("{} columns are too few (at least 8)", columns));
  }
  check_weights("terminal_heatmap", weights);
  std::vector<std::string> shown_labels;
  std::size_t label_width = 0, label_lines = 0;
  for (const std::string& label : labels) {
    shown_labels.push_back(visible_token(label).substr(0, kMaxLabelChars));
    label_width = std::max(label_width, shown_labels.back().size());
    label_lines = std::max(label_lines, shown_labels.back().size());
  }
  const int room = std::max(1, columns - static_cast<int>(label_width) - 1);
  const int cell_width = 2 * seq_len <= room ? 2 : 1;
  const int shown = std::min(seq_len, room);

  std::string out;
  for (std::size_t line = 0; line < label_lines; ++line) {
    out += std::string(label_width + 1, ' ');
    for (int k = 0; k < shown; ++k) {
      const std::string& label = shown_labels[static_cast<std::size_t>(k)];
      out += line < label.size() ? label[line] : ' ';
      out += std::string(static_cast<std::size_t>(cell_width - 1), ' ');
    }
    out += '\n';
  }
  for (int q = 0; q < shown; ++q) {
    out += fmt::format("{:>{}} ", shown_labels[static_cast<std::size_t>(q)], label_width);
    for (int k = 0; k < shown; ++k) {
      const float w = weights[static_cast<std::size_t>(q) * static_cast<std::size_t>(seq_len) +
                              static_cast<std::size_t>(k)];
      out += color ? ansi_cell(w, cell_width) : ascii_cell(w, cell_width);
    }
    out += color ? std::string(kAnsiReset) + "\n" : "\n";
  }
  if (shown < seq_len) {
    out += fmt::format("(first {} of {} positions shown)\n", shown, seq_len);
  }
  out += legend(color, cell_width);
  return out;
}

}  // namespace tinygpt::plot
