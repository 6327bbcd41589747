// Each message is true, and sizes are bounded by what the model can use (issue 57, items 9 and
// 10): the "last good checkpoint" a divergence names resumes; a lock file's dead pid, or one of a
// run that holds no lock, is not named as the holder; SIGHUP stops a run as SIGTERM does; a stop
// signal while the pictures are drawn leaves no half-drawn folder and says what was skipped; a
// window, global tokens or stride beyond the context are refused, and an imported one is capped.
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "process_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The pid of a process that has ended and been reaped: no process has it (until reused).
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return child;
}

// The entries of `dir` whose name starts with ".tinygpt-drawing" (a set of pictures being drawn).
std::vector<std::string> drawing_folders(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".tinygpt-drawing", 0) == 0) found.push_back(name);
  }
  return found;
}

// A model with 2 x 16 heads: its end-of-run heatmaps take long enough to be signalled midway.
std::vector<std::string> many_heads_flags() {
  return with_changes(tiny_model_flags(), {"--layers", "2", "--heads", "16", "--d-model", "32"});
}

// `command` started, and `sig` sent to it once it is drawing the heatmaps into `heatmaps`; the
// result, or nothing checked (a warning) when it finished drawing first.
CliResult signal_while_drawing(const std::vector<std::string>& command, const std::string& heatmaps,
                               int sig) {
  CliProcess process(command);
  const bool drawing = wait_until([&] { return !drawing_folders(heatmaps).empty(); });
  if (drawing) process.send_signal(sig);
  CliResult r = process.finish();
  INFO(r.describe());
  REQUIRE(drawing);
  return r;
}

}  // namespace

TEST_CASE("the last good checkpoint a diverged run names resumes, and diverges again the same way",
          "[cli][messages][checkpoint]") {
  // A huge unclipped --lr overflows a second moment (a gradient element squared beyond float)
  // while the loss and gradient norm are still finite: that step's state must not be kept as good.
  const std::vector<std::vector<std::string>> settings = {
      {"--lr", "1e4", "--grad-clip", "0", "--eval-every", "1"},
      {"--lr", "1e4", "--grad-clip", "0", "--eval-every", "2"},
      {"--lr", "1e6", "--grad-clip", "0", "--eval-every", "1", "--optimizer", "sgd"},
      {"--lr", "1", "--weight-decay", "101", "--lr-decay-steps", "100", "--eval-every", "3"}};
  for (const std::vector<std::string>& setting : settings) {
    CAPTURE(setting);
    ScratchDir dir;
    const std::string run = dir.file("run");
    const CliResult r = run_cli(concat(concat({"train", "--out", run, "--steps", "100", "--min-lr",
                                               "0", "--warmup", "0"},
                                              tiny_model_flags()),
                                       setting));
    INFO(r.describe());
    REQUIRE(r.exited_with(1));
    const std::string last = r.err_lines().back();
    REQUIRE_THAT(last, StartsWith("tinygpt: error: training diverged: "));
    if (last.find("saved nothing") != std::string::npos) continue;  // nothing promised
    const int64_t good = saved_step(run);
    CHECK_THAT(last, Contains("The last good checkpoint (step " + std::to_string(good) +
                              ") is kept in " + run));
    const DirSnapshot kept = snapshot(run);
    // The same data and state from the kept step: the same divergence, the same checkpoint kept.
    const CliResult resumed = run_cli({"train", "--resume", run});
    INFO(resumed.describe());
    CHECK(resumed.exited_with(1));
    CHECK(resumed.err_lines().back() == last);
    CHECK(saved_step(run) == good);
    for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
      CHECK(read_bytes(run + "/" + file) == kept.at(file));
    }
    run_ok({"eval", "--model", run, "--threads", "1"});
  }
}

TEST_CASE("a lock file's dead pid, or the pid of a run that holds no lock, is not named as the holder",
          "[cli][messages][lock]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), lock_file = run + "/.tinygpt-run.lock";
  train_tiny_model(run);
  const std::string me = std::to_string(::getpid());
  const LockTimeout timeout("1.5");
  {
    HeldLock saving(run, LOCK_EX);
    for (const std::string& named : {std::to_string(dead_pid()), me}) {
      CAPTURE(named);
      write_bytes(lock_file, named + "\n");  // a killed run's pid; the file alone, no lock on it
      const CliResult r = run_cli({"sample", "--model", run, "--tokens", "5"});
      INFO(r.describe());
      CHECK(r.exited_with(1));
      const std::vector<std::string> lines = r.err_lines();
      REQUIRE(lines.size() == 2);
      CHECK(lines[0] == "tinygpt: waiting for " + run +
                            ": another tinygpt process is saving or reading it (giving up after 1.5 s)");
      CHECK_THAT(lines[1], StartsWith("tinygpt: error: " + run +
                                      " stayed locked for 1.5 s by another tinygpt process that is"));
    }
    // A live holder of the run lock is named.
    write_bytes(lock_file, me + "\n");
    HeldLock training(lock_file, LOCK_EX);
    const CliResult r = run_cli({"eval", "--model", run, "--threads", "1"});
    INFO(r.describe());
    CHECK_THAT(r.err_lines().front(), Contains("(training run pid " + me + " holds the folder)"));
  }
  // A second run is refused while the lock is held, naming its holder only when it lives.
  for (const std::string& named : {std::to_string(dead_pid()), std::string("garbage"), me}) {
    CAPTURE(named);
    write_bytes(lock_file, named + "\n");
    HeldLock training(lock_file, LOCK_EX);
    const CliResult r = run_cli({"train", "--resume", run, "--steps", "40"});
    const std::string in_use = run + " is in use by another training run";
    check_one_line_error(r, {named == me ? in_use + " (pid " + me + "); wait" : in_use + "; wait"});
  }
}

TEST_CASE("each stop signal (SIGHUP too) saves at the step's end and exits 128 + the signal",
          "[cli][messages][signals][slow]") {
  ScratchDir dir;
  const std::string out = dir.file("run");
  for (const int sig : {SIGHUP, SIGTERM, SIGINT}) {
    CAPTURE(sig);
    fs::remove_all(out);
    CliProcess trainer(long_run(out, 1'000'000, 1'000'000));
    wait_for_first_step(trainer, out);
    trainer.send_signal(sig);
    const CliResult r = trainer.finish();
    INFO(r.describe());
    REQUIRE(r.exited_with(128 + sig));
    const int64_t step = saved_step(out);
    CHECK(r.err_lines().back() == "tinygpt: interrupted at step " + std::to_string(step) +
                                      "; checkpoint saved in " + out +
                                      "; resume with: tinygpt train --resume " + out);
    run_ok({"train", "--resume", out, "--steps", std::to_string(step + 3), "--threads", "1"});
  }
}

TEST_CASE("a stop signal while the pictures are drawn skips them whole and says so",
          "[cli][messages][signals][slow]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), heatmaps = run + "/heads";
  const CliResult r = signal_while_drawing(
      concat({"train", "--out", run, "--steps", "20", "--eval-every", "10"}, many_heads_flags()),
      heatmaps, SIGTERM);
  CHECK(r.exited_with(143));
  const std::string page = run + "/report.html";
  CHECK(r.err_lines().back() ==
        "tinygpt: interrupted while drawing the pictures; checkpoint saved in " + run +
            "; its heatmaps and " + page + " were skipped: tinygpt heads --model " + run +
            " --html " + page + " draws them");
  CHECK(drawing_folders(heatmaps).empty());
  CHECK_FALSE(fs::exists(heatmaps));
  CHECK_FALSE(fs::exists(page));
  CHECK(saved_step(run) == 20);
  // What the line says draws them; then a signal during heads keeps that set as it was.
  run_ok({"heads", "--model", run, "--html", page, "--threads", "1"});
  const DirSnapshot drawn = snapshot(heatmaps);
  REQUIRE_FALSE(drawn.empty());
  for (const int sig : {SIGHUP, SIGINT}) {
    CAPTURE(sig);
    const CliResult heads = signal_while_drawing({"heads", "--model", run, "--threads", "1"}, heatmaps, sig);
    CHECK(heads.exited_with(128 + sig));
    CHECK(heads.err_lines().back() == "tinygpt: interrupted while drawing the heatmaps; none were "
                                      "written to " + heatmaps + " (an earlier set there is as it was)");
    CHECK(snapshot(heatmaps) == drawn);
  }
}

TEST_CASE("a window, global tokens or stride beyond the context are refused at train time",
          "[cli][messages][window]") {
  ScratchDir dir;
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> refused = {
      {{"--attention", "window", "--window", "1000"}, {"--window 1000", "--block 16"}},
      {{"--attention", "window", "--window", "17"}, {"--window 17", "--block 16"}},
      {{"--attention", "window", "--window", "4", "--global-tokens", "17"}, {"--global-tokens 17", "--block 16"}},
      {{"--attention", "strided", "--stride", "40"}, {"--stride 40", "--block 16"}}};
  for (const auto& [flags, named] : refused) {
    CAPTURE(flags);
    const std::string out = dir.file("refused");
    const CliResult r = run_cli(tiny_train_args(out, flags));
    CHECK(r.exited_with(2));
    check_one_line_error(r, named);
    CHECK_FALSE(fs::exists(out));
  }
  // Up to the context is taken.
  run_ok(tiny_train_args(dir.file("whole"), {"--attention", "window", "--window", "16", "--global-tokens", "16"}));
}

TEST_CASE("a folder whose window or stride reaches past the context loads capped at it, with a small cache",
          "[cli][messages][window]") {
  ScratchDir dir;
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> models = {
      {{"--attention", "window", "--window", "4", "--global-tokens", "1"}, {"sliding_window", "global_tokens"}},
      {{"--attention", "strided", "--stride", "4"}, {"sparse_stride"}}};
  for (const auto& [flags, keys] : models) {
    CAPTURE(flags);
    const std::string model = dir.file(flags[1]);
    train_tiny_model(model, flags);
    // As another tool (or an older run) wrote it; the checkpoint manifest is resealed.
    const auto with_reach = [&, &keys = keys](int64_t reach) {
      json config = json::parse(read_bytes(model + "/config.json"));
      for (const std::string& key : keys) config[key] = reach;
      write_bytes(model + "/config.json", config.dump(2));
      fs::remove(model + "/checkpoint.json");
      return run_ok({"sample", "--model", model, "--tokens", "8", "--temperature", "0", "--prompt",
                     "a", "--verbose", "--threads", "1"});
    };
    const CliResult context = with_reach(16);
    const CliResult beyond = with_reach(1'000'000);
    CHECK(beyond.out == context.out);
    std::smatch cache;
    const std::string said = beyond.err;
    REQUIRE(std::regex_search(said, cache, std::regex("KV cache: ([0-9]+) bytes at ([0-9]+) positions")));
    CHECK(std::stoll(cache[2].str()) <= 2 * 16);
  }
}
