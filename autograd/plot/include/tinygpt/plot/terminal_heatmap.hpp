#pragma once
// Attention weights as text, for a quick look in a terminal without opening a PNG.
#include <string>
#include <vector>

namespace tinygpt::plot {

// The widest output line, in terminal columns (escape sequences aside), when the width of the
// terminal is not known.
constexpr int kTerminalColumns = 140;

// The width of the terminal on file descriptor `fd` (TIOCGWINSZ), else $COLUMNS, else
// kTerminalColumns.
int terminal_columns(int fd);

// The ASCII shading ramp, weight 0 to 1: weight w takes character floor(10 w), 1 the last.
constexpr const char* kAsciiRamp = " .:-=+*#%@";

// `weights` is seq_len x seq_len row-major (row = query position), as for save_attention_heatmap.
// One line per query: its label (visible_token, right-aligned), then a cell per key. With `color`
// a cell is an ANSI 256-colour background (viridis), otherwise a character of kAsciiRamp; NaN or
// infinite weights show as red / '?'. Key labels stand above the cells, one character per line
// (several lines for longer labels), and a last line gives the scale. Cells take two columns when
// that fits in `columns` (they look square), otherwise one; when even that does not fit only the
// first positions are shown, and a line says so. Every line ends in '\n'.
// Throws as save_attention_heatmap does for bad arguments, and for fewer than 8 columns.
std::string terminal_heatmap(const float* weights, int seq_len,
                             const std::vector<std::string>& labels, bool color,
                             int columns = kTerminalColumns);

}  // namespace tinygpt::plot
