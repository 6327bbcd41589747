// Symbolic links planted in a run's folder never redirect a write outside it: the files a run
// replaces by a rename (weights, config, pictures, page) replace the link itself; the ones it
// writes in place (the log, the lock, the heatmap and best/ folders) are refused as links before
// anything is trained or written.
#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPrecious = "a file outside the run\n";

// `name` in `run` made a symbolic link to `target`.
void plant_link(const std::string& run, const std::string& name, const std::string& target) {
  fs::remove_all(run + "/" + name);
  fs::create_symlink(target, run + "/" + name);
}

}  // namespace

TEST_CASE("train refuses a log, lock, heatmap or best folder that is a symbolic link, before it writes",
          "[cli][hardening][links]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), outside = dir.file("outside.txt"), outside_dir = dir.file("outside");
  train_tiny_model(run);
  fs::create_directories(outside_dir);
  struct Case {
    std::string name;
    bool directory;
    std::vector<std::string> args;
  };
  const std::vector<Case> cases = {
      {"log.jsonl", false, {"train", "--resume", run, "--steps", "30"}},
      {".tinygpt-run.lock", false, {"train", "--resume", run, "--steps", "30"}},
      {".tinygpt-run.lock", false, tiny_train_args(run, {"--force"})},
      {"heads", true, tiny_train_args(run, {"--force"})},
      {"heads", true, {"train", "--resume", run, "--steps", "30"}},
      {"best", true, {"train", "--resume", run, "--steps", "30", "--keep-best"}},
      {"heads", true, {"heads", "--model", run}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name, c.args);
    // The log's link points at a copy of the log itself, so only the link can be the reason.
    write_bytes(outside, c.name == "log.jsonl" ? read_bytes(run + "/log.jsonl") : kPrecious);
    const std::string target = c.directory ? outside_dir : outside;
    plant_link(run, c.name, target);
    const DirSnapshot before = snapshot(run);
    const std::string outside_before = read_bytes(outside);
    const CliResult r = run_cli(c.args);
    check_one_line_error(r, {run + "/" + c.name, "symbolic link"});
    CHECK(r.exited_with(1));
    CHECK(read_bytes(outside) == outside_before);
    CHECK(fs::is_empty(outside_dir));
    CHECK(snapshot(run) == before);
    fs::remove(run + "/" + c.name);
    if (c.name == "log.jsonl") write_bytes(run + "/log.jsonl", outside_before);
  }
  run_ok({"train", "--resume", run, "--steps", "30"});  // links gone, the run goes on
}

TEST_CASE("files a run replaces by a rename replace a symbolic link planted in their place, not its target",
          "[cli][hardening][links]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), outside = dir.file("outside.txt");
  train_tiny_model(run);
  for (const char* name : {"model.safetensors", "config.json", "loss.png", "report.html",
                           "heads_over_time.png", "trainer_state.json"}) {
    CAPTURE(name);
    write_bytes(outside, kPrecious);
    plant_link(run, name, outside);
    run_ok(tiny_train_args(run, {"--force"}));
    CHECK(read_bytes(outside) == kPrecious);
    CHECK_FALSE(fs::is_symlink(run + "/" + name));
    CHECK(fs::is_regular_file(run + "/" + name));
  }
  // heads --html onto a link replaces the link with the page.
  write_bytes(outside, kPrecious);
  fs::create_symlink(outside, dir.file("page.html"));
  run_ok({"heads", "--model", run, "--html", dir.file("page.html"), "--out", dir.file("pics")});
  CHECK(read_bytes(outside) == kPrecious);
  CHECK_FALSE(fs::is_symlink(dir.file("page.html")));
}
