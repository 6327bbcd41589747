// tinygpt chart: a tab-separated table drawn as a PNG line chart, one line per column; a table it
// cannot read, or an --out that is a checkpoint's file, is refused in one line with nothing written.
#include <filesystem>

#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

namespace {

// A big-endian 32-bit field of the PNG's header chunk.
uint32_t png_field(const std::string& png, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
  return v;
}

}  // namespace

TEST_CASE("chart draws a table's columns as lines of a PNG", "[cli]") {
  ScratchDir dir;
  write_bytes(dir.file("t.tsv"), "source length\tnone\tdot\n4\t0\t0.98\n8\t0\t0.9\n\n32\t0\t0.04\n");
  const CliResult r = run_ok({"chart", "--table", dir.file("t.tsv"), "--out", dir.file("c.png"),
                              "--title", "exact match", "--y-name", "exact match"});
  CHECK(r.out == "chart: " + dir.file("c.png") + "\n");
  const std::string png = read_bytes(dir.file("c.png"));
  REQUIRE(png.size() > 24);
  CHECK(png.substr(0, 8) == "\x89PNG\r\n\x1a\n");
  CHECK(png_field(png, 16) == 960);  // the IHDR's width and height: the loss curve's size
  CHECK(png_field(png, 20) == 600);
}

TEST_CASE("chart refuses a table it cannot read and an --out that is a checkpoint's file", "[cli]") {
  ScratchDir dir;
  const std::string out = dir.file("c.png");
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"x\tseries\n4\tzero\n", "line 2: 'zero' is not a number"},
      {"x\ta\tb\n4\t0.5\n", "line 2: 2 cells, the header has 3"},
      {"x\n4\n", "line 1"},
      {"", "empty"}};
  for (const auto& [text, why] : tables) {
    CAPTURE(text);
    write_bytes(dir.file("t.tsv"), text);
    const CliResult r = run_cli({"chart", "--table", dir.file("t.tsv"), "--out", out});
    CHECK(r.exit_code == 1);
    check_one_line_error(r, {"--table", why});
  }
  CHECK_FALSE(std::filesystem::exists(out));

  write_bytes(dir.file("t.tsv"), "x\ty\n1\t2\n");
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const std::string config = read_bytes(run + "/config.json");
  const CliResult r = run_cli({"chart", "--table", dir.file("t.tsv"), "--out", run + "/config.json"});
  CHECK(r.exit_code == 2);
  check_one_line_error(r, {"--out", "checkpoint"});
  CHECK(read_bytes(run + "/config.json") == config);
}
