#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <sstream>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/terminal_heatmap.hpp"

using namespace tinygpt::plot;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line without ANSI escape sequences: what the terminal shows.
std::string visible(const std::string& line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      i = line.find('m', i);
      continue;
    }
    out += line[i];
  }
  return out;
}

std::vector<std::string> char_labels(int n) {
  std::vector<std::string> labels;
  for (int i = 0; i < n; ++i) labels.emplace_back(1, static_cast<char>('a' + i % 26));
  return labels;
}

std::vector<float> identity(int n) {
  std::vector<float> w(static_cast<std::size_t>(n) * n, 0.0f);
  for (int i = 0; i < n; ++i) w[static_cast<std::size_t>(i) * n + i] = 1.0f;
  return w;
}

}  // namespace

TEST_CASE("terminal heatmap: a label line, T rows and a scale line", "[plot][terminal]") {
  const auto out = terminal_heatmap(identity(5).data(), 5, {"a", "b", " ", "\n", "e"}, false);
  const auto lines = lines_of(out);
  REQUIRE(lines.size() == 2 + 5 + 1);  // "\n" shows as two characters, one per header line
  CHECK(out.back() == '\n');
  // Labels right-aligned in a two-character column, cells two characters wide.
  CHECK(lines[0] == "   a b _ \\ e ");
  CHECK(lines[1] == "         n   ");
  CHECK(lines[2] == " a @@        ");
  CHECK(lines[3] == " b   @@      ");
  CHECK(lines[4] == " _     @@    ");
  CHECK(lines[5] == "\\n       @@  ");
  CHECK(lines[6] == " e         @@");
  CHECK(lines[7].rfind("scale: 0 [", 0) == 0);
}

TEST_CASE("terminal heatmap: weights map onto the ramp \" .:-=+*#%@\" by tenths",
          "[plot][terminal]") {
  const std::string ramp = kAsciiRamp;
  REQUIRE(ramp.size() == 10);
  // A 10x10 matrix whose row i is all (i + 0.5) / 10, plus the ends and out-of-range values.
  const int n = 10;
  std::vector<float> w(n * n);
  for (int q = 0; q < n; ++q) {
    for (int k = 0; k < n; ++k) w[q * n + k] = (static_cast<float>(q) + 0.5f) / 10.0f;
  }
  w[0] = 0.0f;
  w[1] = -0.2f;
  w[n * n - 1] = 1.0f;
  w[n * n - 2] = 1.7f;
  const auto lines = lines_of(terminal_heatmap(w.data(), n, char_labels(n), false));
  REQUIRE(lines.size() == 1 + n + 1);
  for (int q = 0; q < n; ++q) {
    const std::string& row = lines[static_cast<std::size_t>(1 + q)];
    INFO(row);
    const std::string cells = row.substr(2);  // label and space
    REQUIRE(cells.size() == 2 * n);
    CHECK(cells[4] == ramp[static_cast<std::size_t>(q)]);
  }
  CHECK(lines[1].substr(2, 4) == "    ");                // 0 and below: blank
  CHECK(lines[n].substr(2 + 2 * (n - 2), 4) == "@@@@");  // 1 and above: '@'
}

TEST_CASE("terminal heatmap: colour cells are ANSI 256-colour backgrounds, bright on the diagonal",
          "[plot][terminal]") {
  const int n = 4;
  const auto out = terminal_heatmap(identity(n).data(), n, char_labels(n), true);
  const auto lines = lines_of(out);
  REQUIRE(lines.size() == 1 + n + 1);
  const std::string bright = "\x1b[48;5;220m", dark = "\x1b[48;5;53m";  // viridis 1 and 0
  for (int q = 0; q < n; ++q) {
    const std::string& row = lines[static_cast<std::size_t>(1 + q)];
    CHECK(row.find(bright) != std::string::npos);
    CHECK(row.size() >= 4);
    CHECK(row.substr(row.size() - 4) == "\x1b[0m");  // colours reset before the line ends
    CHECK(visible(row) ==
          std::string(1, static_cast<char>('a' + q)) + " " + std::string(2 * n, ' '));
    // Three dark cells and one bright one per row.
    std::size_t darks = 0;
    for (std::size_t at = row.find(dark); at != std::string::npos; at = row.find(dark, at + 1)) {
      ++darks;
    }
    CHECK(darks == n - 1);
  }
}

TEST_CASE("terminal heatmap: 64 positions fit in 140 columns, more are cut with a note",
          "[plot][terminal]") {
  for (const bool color : {false, true}) {
    const auto lines = lines_of(terminal_heatmap(identity(64).data(), 64, char_labels(64), color));
    CHECK(lines.size() == 1 + 64 + 1);
    for (const auto& line : lines) CHECK(visible(line).size() <= kTerminalColumns);
  }
  const int n = 300;
  const auto lines = lines_of(terminal_heatmap(identity(n).data(), n, char_labels(n), false));
  const int shown = kTerminalColumns - 2;  // a one-character label and a space
  REQUIRE(lines.size() == static_cast<std::size_t>(1 + shown + 2));
  for (const auto& line : lines) CHECK(line.size() <= kTerminalColumns);
  CHECK(lines[lines.size() - 2] == "(first 138 of 300 positions shown)");
  CHECK(lines[1].substr(0, 4) == "a @ ");  // one column per cell once two do not fit
}

TEST_CASE("terminal heatmap: fits the terminal's width", "[plot][terminal]") {
  for (const int columns : {40, 80, 200}) {
    INFO(columns);
    const int n = 64;
    const auto lines = lines_of(terminal_heatmap(identity(n).data(), n, char_labels(n), false, columns));
    for (const auto& line : lines) CHECK(static_cast<int>(line.size()) <= columns);
    const int shown = std::min(n, columns - 2);
    CHECK(lines.size() == static_cast<std::size_t>(1 + shown + (shown < n ? 2 : 1)));
  }
  CHECK_THROWS_WITH(terminal_heatmap(identity(4).data(), 4, char_labels(4), false, 3),
                    Catch::Matchers::Contains("3 columns"));
}

TEST_CASE("terminal heatmap: NaN shows as '?' and bad arguments throw", "[plot][terminal]") {
  std::vector<float> w = {std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.5f, 0.5f};
  const auto lines = lines_of(terminal_heatmap(w.data(), 2, {"x", "y"}, false));
  CHECK(lines[1] == "x ??  ");
  CHECK_THROWS_AS(terminal_heatmap(w.data(), 2, {"x"}, false), tinygpt::ShapeError);
  CHECK_THROWS_AS(terminal_heatmap(nullptr, 2, {"x", "y"}, false), tinygpt::ValueError);
  CHECK_THROWS_AS(terminal_heatmap(w.data(), 0, {}, false), tinygpt::ValueError);
}
