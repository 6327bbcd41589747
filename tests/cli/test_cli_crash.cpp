// Crash safety of tinygpt train's checkpoints, with the real binary: a run checkpointing every
// step is killed (SIGKILL) at pseudo-random moments, and every time the directory must load and
// the run must resume; in the end it must equal a run never interrupted. Readers (sample) running
// during training must disturb nothing either. Correctness only: no timing is asserted.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <random>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/io/commit.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

// The training loss of every step in the committed part of log.jsonl (evaluation lines have
// none): its first bytes, as many as the commit records — the record of a save a kill interrupted
// after its commit point when there is one (a load reads that save), else checkpoint.json. The
// run writes the log a line at a time, so a kill between saves leaves lines after them, which a
// resume cuts off.
std::vector<double> step_losses(const std::string& dir) {
  uint64_t committed = 0;
  const std::string record = dir + "/" + tinygpt::io::kCommitRecord;
  const json manifest =
      json::parse(read_bytes(std::filesystem::exists(record) ? record : dir + "/checkpoint.json"));
  for (const json& file : manifest.at("files")) {
    if (file.at("name") == "log.jsonl") committed = file.at("size").get<uint64_t>();
  }
  std::istringstream lines(read_bytes(committed_path(dir, "log.jsonl")).substr(0, committed));
  std::vector<double> losses;
  for (std::string line; std::getline(lines, line);) {
    const json entry = json::parse(line);
    if (entry.contains("loss")) losses.push_back(entry.at("loss").get<double>());
  }
  return losses;
}

// The flags of both the interrupted run and the reference; the schedule's horizon is fixed so
// that --steps can differ between them.
std::vector<std::string> run_flags(int64_t total_steps) {
  return concat(tiny_model_flags(), {"--lr-decay-steps", std::to_string(total_steps)});
}

// Trains one step into `dir`, for a first checkpoint, with the flags of a run of `total_steps`.
void train_first_step(const std::string& dir, int64_t total_steps) {
  run_ok(concat({"train", "--out", dir, "--steps", "1", "--eval-every", "1"}, run_flags(total_steps)));
}

// train --resume of the run in `dir`, up to `steps`, checkpointing every `eval_every`.
std::vector<std::string> resume_args(const std::string& dir, int64_t steps, int64_t eval_every) {
  return {"train",        "--resume", dir, "--steps", std::to_string(steps), "--eval-every",
          std::to_string(eval_every), "--threads", "1"};
}

// The run in `dir` ended exactly as one trained to `steps` without interruption.
void check_equals_uninterrupted(const ScratchDir& scratch, const std::string& dir, int64_t steps) {
  const std::string reference = scratch.file("reference");
  run_ok(concat({"train", "--out", reference, "--steps", std::to_string(steps), "--eval-every",
                 std::to_string(steps)},
                run_flags(steps)));
  REQUIRE(saved_step(dir) == steps);
  CHECK(read_bytes(dir + "/model.safetensors") == read_bytes(reference + "/model.safetensors"));
  CHECK(read_bytes(dir + "/optimizer.safetensors") ==
        read_bytes(reference + "/optimizer.safetensors"));
  CHECK(step_losses(dir) == step_losses(reference));
}

// A finished run's directory: the checkpoint, its log, the pictures and the explorer page
// written at the end, and the run lock.
const std::set<std::string> kCheckpointFiles = {".tinygpt-run.lock", "checkpoint.json",
                                                "config.json", "heads",
                                                "heads_over_time.png",
                                                "log.jsonl",         "loss.png",
                                                "model.safetensors", "optimizer.safetensors",
                                                "report.html",       "tokenizer.json",
                                                "trainer_state.json"};

std::set<std::string> entries_of(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

}  // namespace

TEST_CASE("train killed at random moments always leaves a checkpoint that loads and resumes",
          "[cli][checkpoint][resume][slow]") {
  constexpr int64_t kSteps = 400;
  ScratchDir scratch;
  const std::string run = scratch.file("run");
  train_first_step(run, kSteps);

  std::mt19937 gen(20261121);  // fixed, so a failure names the same delays again
  std::uniform_int_distribution<int> delay_ms(50, 400);
  for (int kill = 0; kill < 6 && saved_step(run) < kSteps; ++kill) {
    const int64_t step_before = saved_step(run);
    const int delay = delay_ms(gen);
    CAPTURE(kill, delay, step_before);
    CliProcess trainer(resume_args(run, kSteps, 1));
    if (trainer.wait_for(std::chrono::milliseconds(delay))) {  // a fast disk: it finished
      const CliResult r = trainer.finish();
      INFO(r.describe());
      REQUIRE(r.exited_with(0));
      break;
    }
    trainer.send_signal(SIGKILL);
    const CliResult killed = trainer.finish();
    INFO(killed.describe());
    // It may have finished between the last look and the signal.
    CHECK((killed.signal == SIGKILL || killed.exited_with(0)));

    // What the kill left loads: a reader reads the files of a commit the kill interrupted after
    // its record, from the staging folder, and the one before it otherwise; it changes nothing
    // (it holds a shared lock and may lack write access), so a save's staging folder and record
    // may remain until the next writer completes or discards them. Nothing else is left.
    const CliResult eval =
        run_ok({"eval", "--model", run, "--data", "builtin:toy", "--json", "--threads", "1"});
    CHECK(std::isfinite(json::parse(eval.out).at("loss").get<double>()));
    // The end-of-run page and heatmaps go once a resumed run has saved (they describe an
    // earlier step); the checkpoint's own files are all there.
    std::set<std::string> left = entries_of(run);
    left.erase(tinygpt::io::kStagingDir);
    left.erase(tinygpt::io::kCommitRecord);
    std::set<std::string> kept = kCheckpointFiles;
    kept.erase("report.html");
    kept.erase("heads");
    for (const std::string& name : left) CHECK(kCheckpointFiles.count(name) == 1);
    for (const std::string& name : kept) CHECK(left.count(name) == 1);
    CHECK(saved_step(run) >= step_before);
    CHECK(static_cast<int64_t>(step_losses(run).size()) == saved_step(run));
  }
  if (saved_step(run) < kSteps) {
    run_ok(resume_args(run, kSteps, kSteps));
  }
  CHECK(entries_of(run) == kCheckpointFiles);  // the last writer left nothing staged
  check_equals_uninterrupted(scratch, run, kSteps);
}

TEST_CASE("sampling from a run while it checkpoints every step disturbs neither",
          "[cli][checkpoint][sample][slow]") {
  constexpr int64_t kSteps = 40;
  ScratchDir scratch;
  const std::string run = scratch.file("run");
  train_first_step(run, kSteps);

  CliProcess trainer(resume_args(run, kSteps, 1));
  int samples = 0;
  while (!trainer.wait_for(std::chrono::milliseconds(1))) {
    const CliResult r = run_cli({"sample", "--model", run, "--tokens", "8"});
    INFO(r.describe());
    REQUIRE(r.exited_with(0));
    ++samples;
  }
  const CliResult trained = trainer.finish();
  INFO(trained.describe());
  REQUIRE(trained.exited_with(0));
  if (samples == 0) WARN("training ended before the first sample: nothing was tested");
  check_equals_uninterrupted(scratch, run, kSteps);
}
