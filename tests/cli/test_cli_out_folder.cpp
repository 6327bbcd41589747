// Where train writes: a new or empty folder, or a tinygpt run (replaced only with --force), or,
// with --force, any folder; never the text it trains on; and nothing at all when it refuses.
#include <signal.h>

#include <chrono>
#include <thread>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;

TEST_CASE("train refuses a folder that is not empty and holds no run, touching nothing", "[cli][hardening][out]") {
  ScratchDir dir;
  write_bytes(dir.file("t.txt"), std::string(2000, 'a') + "the cat.\n");
  const std::vector<std::vector<std::string>> contents = {
      {"config.json"}, {"log.jsonl", "notes.txt"}, {"report.html"}, {"a", "b", "c", "d", "e"}};
  for (const std::vector<std::string>& names : contents) {
    CAPTURE(names);
    const std::string out = dir.file("u" + std::to_string(names.size()) + names.front());
    fs::create_directories(out);
    for (const std::string& name : names) write_bytes(out + "/" + name, "{\"mine\": 1}\n");
    const DirSnapshot before = snapshot(out);
    const CliResult r = run_cli(tiny_train_args(out, {"--data", dir.file("t.txt")}));
    check_one_line_error(r, {out + " is not empty (" + names.front(), "--force"});
    CHECK(r.exited_with(1));
    CHECK(snapshot(out) == before);  // no lock file either
  }
  // `--out .` in a project folder.
  const std::string project = dir.file("project");
  fs::create_directories(project);
  write_bytes(project + "/config.json", "{\"project\": true}\n");
  CliOptions in_project;
  in_project.cwd = project;
  const CliResult r = run_cli(tiny_train_args(".", {"--data", dir.file("t.txt")}), in_project);
  check_one_line_error(r, {"not empty (config.json)"});
  CHECK(snapshot(project) == DirSnapshot{{"config.json", "{\"project\": true}\n"}});
}

TEST_CASE("train never writes where its text is, --force or not", "[cli][hardening][out]") {
  ScratchDir dir;
  const std::string text = std::string(3000, 'b') + "a dog.\n";
  for (const char* name : {"log.jsonl", "config.json", "model.safetensors", "notes/data.txt"}) {
    for (const bool force : {false, true}) {
      CAPTURE(name, force);
      const std::string out = dir.file(std::string("d-") + (force ? "f" : "n") + "-" + fs::path(name).stem().string());
      fs::create_directories(fs::path(out + "/" + name).parent_path());
      write_bytes(out + "/" + name, text);
      std::vector<std::string> args = tiny_train_args(out, {"--data", out + "/" + name});
      if (force) args.push_back("--force");
      const DirSnapshot before = snapshot(out);
      const CliResult r = run_cli(args);
      check_one_line_error(r, {"is inside the output folder " + out});
      CHECK(r.exited_with(2));
      CHECK(snapshot(out) == before);
    }
  }
}

TEST_CASE("with --force train writes into a folder that is not a run, keeping files that are not its own",
          "[cli][hardening][out]") {
  ScratchDir dir;
  const std::string out = dir.file("mixed");
  fs::create_directories(out);
  write_bytes(out + "/notes.txt", "keep me\n");
  write_bytes(out + "/log.jsonl", "a log of mine\n");
  // Diverging before its first save, the run leaves the folder's files as they were.
  const CliResult diverged = run_cli(concat(tiny_train_args(out, {"--force", "--eval-every", "1", "--lr", "1e30",
                                                                  "--min-lr", "0", "--warmup", "0", "--grad-clip", "0"}),
                                            {}));
  CHECK_THAT(diverged.err, Catch::Matchers::Contains("saved nothing in " + out));
  CHECK(snapshot(out) == DirSnapshot{{"log.jsonl", "a log of mine\n"}, {"notes.txt", "keep me\n"}});
  // A finished run saves, and what is not a run's file stays.
  run_ok(tiny_train_args(out, {"--force"}));
  CHECK(read_bytes(out + "/notes.txt") == "keep me\n");
  CHECK(saved_step(out) == 20);
  // A folder holding only tinygpt's own lock file counts as empty.
  const std::string locked = dir.file("locked");
  fs::create_directories(locked);
  write_bytes(locked + "/.tinygpt-run.lock", "");
  train_tiny_model(locked);
}

TEST_CASE("the pictures of a replaced run, or of an earlier step, do not outlive it", "[cli][hardening][out]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run, {"--layers", "2"});
  REQUIRE(fs::exists(run + "/heads/layer1_head1.png"));
  write_bytes(run + "/heads/notes.txt", "mine\n");  // not a picture of tinygpt's: it stays
  // --force with a 1-layer model: its report has no layer 1.
  run_ok(tiny_train_args(run, {"--force"}));
  CHECK(fs::exists(run + "/heads/layer0_head1.png"));
  CHECK_FALSE(fs::exists(run + "/heads/layer1_head1.png"));
  CHECK_FALSE(fs::exists(run + "/heads/layer1.png"));
  CHECK(read_bytes(run + "/heads/notes.txt") == "mine\n");
  // A resume interrupted after it saved: the page and heatmaps of step 20 are gone, and the loss
  // curve is drawn to the step saved.
  const std::string curve = read_bytes(run + "/loss.png");
  CliProcess trainer({"train", "--resume", run, "--steps", "1000000", "--eval-every", "1", "--threads", "1"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (saved_step(run) <= 21 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  trainer.send_signal(SIGINT);
  const CliResult r = trainer.finish();
  INFO(r.describe());
  REQUIRE(r.exited_with(130));
  CHECK_FALSE(fs::exists(run + "/report.html"));
  CHECK_FALSE(fs::exists(run + "/heads/layer0_head0.png"));
  CHECK(read_bytes(run + "/heads/notes.txt") == "mine\n");
  CHECK(read_bytes(run + "/loss.png") != curve);
  // Finished again, the run draws its report anew.
  run_ok({"train", "--resume", run, "--steps", std::to_string(saved_step(run) + 2), "--threads", "1"});
  CHECK(fs::exists(run + "/report.html"));
  CHECK(fs::exists(run + "/heads/layer0_head0.png"));
}
