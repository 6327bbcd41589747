// tinygpt chart: a table of numbers as a PNG line chart, one line per column (docs/bottleneck.py
// draws exact match against source length with it, one line per model).
#include <cmath>
#include <sstream>

#include "commands.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/plot/loss_plot.hpp"

namespace tinygpt::cli {
namespace {

// A table is text, far below this.
constexpr uint64_t kMaxTableBytes = uint64_t{64} << 20;

struct ChartFlags {
  std::string table, out, title, y_name = "value";
};

struct ChartTable {
  std::string x_name;
  std::vector<plot::NamedSeries> series;
};

std::vector<std::string> tab_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream in(line);
  for (std::string cell; std::getline(in, cell, '\t');) cells.push_back(cell);
  if (!line.empty() && line.back() == '\t') cells.emplace_back();
  return cells;
}

double cell_number(const std::string& cell, const std::string& where) {
  size_t used = 0;
  double value = NAN;
  try {
    value = std::stod(cell, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != cell.size()) throw Error(fmt::format("{}: '{}' is not a number", where, cell));
  return value;
}

// The header's first cell names the x axis, the others the series; each further line is an x
// value and one value per series, all separated by tabs.
ChartTable read_chart_table(const std::string& path) {
  std::istringstream in(io::read_file(path, kMaxTableBytes));
  std::string line;
  if (!std::getline(in, line)) throw Error(fmt::format("--table {}: empty, expected a header line", path));
  const std::vector<std::string> header = tab_cells(line);
  if (header.size() < 2) throw Error(fmt::format("--table {}: line 1: expected the x name and at least one series name, separated by tabs", path));
  ChartTable table{header[0], {}};
  for (size_t c = 1; c < header.size(); ++c) table.series.push_back({header[c], {}});
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = tab_cells(line);
    const std::string where = fmt::format("--table {}: line {}", path, number);
    if (cells.size() != header.size()) {
      throw Error(fmt::format("{}: {} cells, the header has {}", where, cells.size(), header.size()));
    }
    const double x = cell_number(cells[0], where);
    for (size_t c = 1; c < cells.size(); ++c) table.series[c - 1].points.push_back({x, cell_number(cells[c], where)});
  }
  return table;
}

void run_chart(const ChartFlags& f) {
  check_out_file(f.out, f.table, "the --table file");
  const ChartTable table = read_chart_table(f.table);
  plot::save_series_chart(f.out, table.series, table.x_name, f.y_name, f.title);
  fmt::print("chart: {}\n", f.out);
}

}  // namespace

void add_chart_command(CLI::App& app) {
  auto flags = std::make_shared<ChartFlags>();
  CLI::App* cmd = app.add_subcommand("chart", "Draw a table of numbers as a PNG line chart, one line per column");
  cmd->add_option("--table", flags->table,
                  "tab-separated text: a header (the x axis' name, then one name per line of the chart), then rows of "
                  "an x value and one value per line")
      ->type_name("FILE")->required();
  cmd->add_option("--out", flags->out, "the PNG to write (replaced whole)")->type_name("FILE")->required();
  cmd->add_option("--title", flags->title, "the title above the chart");
  cmd->add_option("--y-name", flags->y_name, "the y axis' name")->capture_default_str();
  cmd->callback([flags] { run_chart(*flags); });
}

}  // namespace tinygpt::cli
