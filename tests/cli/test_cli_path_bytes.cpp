// Paths are bytes (issue 57): a Linux path that is not UTF-8, or a name of NAME_MAX bytes, works
// for every flag that names a file or folder, and JSON files give such a path back exactly.
#include <filesystem>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A name that is not UTF-8: 0xff never occurs in UTF-8 text.
const std::string kNotUtf8 = "bad\xffname";
// The longest name a Linux file system takes (NAME_MAX).
const std::string kLongest(255, 'n');

// The commands that read the run in `run`, each required to work; `html` is where heads writes
// its page.
void use_run(const std::string& run, const std::string& html) {
  const json sampled = json::parse(run_ok({"sample", "--model", run, "--tokens", "5", "--json"}).out);
  CHECK(sampled["tokens"] == 5);
  run_ok({"eval", "--model", run, "--data", "builtin:toy", "--threads", "1"});
  run_ok({"heads", "--model", run, "--threads", "1", "--json"});
  run_ok({"heads", "--model", run, "--threads", "1", "--html", html});
  CHECK(fs::is_regular_file(html));
  run_ok({"train", "--resume", run, "--steps", "30", "--json"});
  CHECK(saved_step(run) == 30);
}

}  // namespace

TEST_CASE("train --out, sample --model and heads --html take a name that is not UTF-8",
          "[cli][path-bytes][slow]") {
  ScratchDir dir;
  const std::string run = dir.file(kNotUtf8);
  run_ok(tiny_train_args(run, {"--json"}));
  CHECK(fs::is_regular_file(run + "/report.html"));
  use_run(run, dir.file(kNotUtf8 + ".html"));
  CHECK(dir.entries() == std::set<std::string>{kNotUtf8, kNotUtf8 + ".html"});
}

TEST_CASE("train --out and heads --html take a name of NAME_MAX bytes",
          "[cli][path-bytes][slow]") {
  ScratchDir dir;
  const std::string run = dir.file(kLongest);
  run_ok(tiny_train_args(run));
  fs::create_directory(dir.file("pages"));
  use_run(run, dir.file("pages/" + kLongest));
  CHECK(dir.entries() == std::set<std::string>{kLongest, "pages"});
  CHECK(fs::directory_iterator(dir.file("pages"))->path().filename() == kLongest);
}

TEST_CASE("train --data and --init-from paths that are not UTF-8 are recorded exactly and resume",
          "[cli][path-bytes][slow]") {
  ScratchDir dir;
  const std::string data = dir.file("text " + kNotUtf8 + ".txt");
  write_bytes(data, read_bytes(std::string(TINYGPT_SOURCE_DIR) + "/README.md"));
  const std::string run = dir.file("run");
  run_ok(tiny_train_args(run, {"--data", data}));
  const json state = json::parse(read_bytes(run + "/trainer_state.json"));
  std::string hex;
  for (const unsigned char byte : fs::absolute(data).string()) hex += fmt::format("{:02x}", byte);
  CHECK(state["data_source_hex"] == hex);
  CHECK(state["data_source"].get<std::string>().find("bad\xef\xbf\xbdname") != std::string::npos);
  run_ok({"train", "--resume", run, "--steps", "30"});
  CHECK(saved_step(run) == 30);

  const std::string tuned = dir.file("tuned " + kNotUtf8);
  const std::string from = dir.file("from " + kNotUtf8);
  fs::rename(run, from);
  run_ok({"train", "--init-from", from, "--out", tuned, "--data", data, "--steps", "5", "--eval-every",
          "5", "--eval-iters", "1", "--batch", "4", "--threads", "1"});
  const json tuned_state = json::parse(read_bytes(tuned + "/trainer_state.json"));
  CHECK(tuned_state["init_from"].contains("dir_hex"));
  run_ok({"train", "--resume", tuned, "--steps", "10"});
  CHECK(saved_step(tuned) == 10);
}
