// What a finished run tells its user: train --json's summary, the end-of-run line naming the
// checkpoint kept, and --keep-best's copy of the best-val-loss weights beside the last ones.
#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A learning rate high enough that the val loss of the tiny model goes down, then up: its best
// evaluation (of six) comes before its last.
std::vector<std::string> bumpy_run(const std::string& out, const std::vector<std::string>& more = {}) {
  return concat(tiny_train_args(out, {"--steps", "60", "--lr", "0.05", "--warmup", "0"}), more);
}

}  // namespace

TEST_CASE("train --json prints one summary object on stdout and the report on stderr", "[cli][train]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  const CliResult r = run_ok(bumpy_run(run, {"--json"}));
  const json j = json::parse(r.out);  // stdout holds the object and nothing else
  CHECK(r.err.find("done: 60 steps") != std::string::npos);
  CHECK(j["steps"] == 60);
  CHECK(j["steps_run"] == 60);
  CHECK(j["interrupted"] == false);
  CHECK(j["data"] == "builtin:toy");
  CHECK(j["checkpoint"] == run);
  CHECK(j["checkpoint_step"] == 60);
  CHECK(j["tokens_per_s"].get<double>() > 0.0);
  CHECK(j["seconds"].get<double>() > 0.0);
  CHECK(j["best_checkpoint"].is_null());  // no --keep-best
  // The losses are the run's last evaluation and its best, as log.jsonl has them.
  std::vector<json> evals;
  for (const json& entry : log_without_timing(run)) {
    if (entry.contains("val_loss")) evals.push_back(entry);
  }
  REQUIRE(evals.size() == 6);
  CHECK(j["eval_step"] == 60);
  CHECK(j["val_loss"] == evals.back()["val_loss"]);
  CHECK(j["train_loss"] == evals.back()["train_loss"]);
  const json best = *std::min_element(evals.begin(), evals.end(), [](const json& a, const json& b) {
    return a["val_loss"].get<double>() < b["val_loss"].get<double>();
  });
  CHECK(j["best_val_loss"] == best["val_loss"]);
  CHECK(j["best_step"] == best["step"]);
  REQUIRE(best["step"] < 60);  // the premise of the next lines
  CHECK(r.err.find("checkpoint in " + run + " holds step 60 (the last); --keep-best would keep the best too") !=
        std::string::npos);
}

TEST_CASE("train --keep-best keeps the best evaluation's weights in OUT/best, and resume continues from the last",
          "[cli][train][checkpoint]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  const json summary = json::parse(run_ok(bumpy_run(run, {"--keep-best", "--json"})).out);
  const int64_t best_step = summary["best_step"].get<int64_t>();
  REQUIRE(best_step < 60);
  CHECK(summary["best_checkpoint"] == run + "/best");
  CHECK(saved_step(run) == 60);

  // OUT/best holds the weights a run stopped at the best step had (the same schedule, so
  // --lr-decay-steps 60), byte for byte.
  const std::string stopped = dir.file("stopped");
  run_ok(concat(tiny_train_args(stopped, {"--steps", std::to_string(best_step), "--lr", "0.05",
                                          "--warmup", "0", "--lr-decay-steps", "60"}),
                {}));
  CHECK(read_bytes(run + "/best/model.safetensors") == read_bytes(stopped + "/model.safetensors"));
  CHECK(read_bytes(run + "/best/config.json") == read_bytes(run + "/config.json"));
  CHECK(json::parse(read_bytes(run + "/trainer_state.json"))["best_step"] == best_step);

  // sample, eval and heads read it; eval finds the run's text through the run beside it.
  run_ok({"sample", "--model", run + "/best", "--tokens", "10"});
  const json at_best = json::parse(run_ok({"eval", "--model", run + "/best", "--json", "--threads", "1"}).out);
  const json at_last = json::parse(run_ok({"eval", "--model", run, "--json", "--threads", "1"}).out);
  CHECK(at_best["loss"] != at_last["loss"]);

  // Resume continues from the last step, and keeps keeping the best without being asked again.
  const DirSnapshot best_before = snapshot(run + "/best");
  run_ok({"train", "--resume", run, "--steps", "70", "--json"});
  CHECK(saved_step(run) == 70);
  const json state = json::parse(read_bytes(run + "/trainer_state.json"));
  CHECK(state["keep_best"] == true);
  if (state["best_step"] == best_step) {
    CHECK(snapshot(run + "/best") == best_before);
  } else {
    CHECK(state["best_step"] == 70);
    CHECK(snapshot(run + "/best") != best_before);
  }
}

TEST_CASE("without --keep-best a run keeps no best folder, and its best is its last when it improves",
          "[cli][train]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  const CliResult r = run_ok(tiny_train_args(run, {"--steps", "20", "--lr", "0.01", "--warmup", "0"}));
  CHECK_FALSE(fs::exists(run + "/best"));
  // At this learning rate both evaluations improve.
  REQUIRE(json::parse(read_bytes(run + "/trainer_state.json"))["best_step"] == 20);
  CHECK(r.err.find("at step 20 (the best); checkpoint in " + run + " holds step 20\n") != std::string::npos);
}

TEST_CASE("train --keep-best given on resume keeps the weights just loaded when they were the best",
          "[cli][train][checkpoint]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  run_ok(tiny_train_args(run, {"--steps", "20", "--lr", "0.01", "--warmup", "0", "--lr-decay-steps", "40"}));
  REQUIRE(json::parse(read_bytes(run + "/trainer_state.json"))["best_step"] == 20);
  const std::string at_20 = read_bytes(run + "/model.safetensors");
  const json summary = json::parse(run_ok({"train", "--resume", run, "--steps", "30", "--keep-best", "--json"}).out);
  const int64_t best_step = summary["best_step"].get<int64_t>();
  CHECK(summary["best_checkpoint"] == run + "/best");
  CHECK(read_bytes(run + "/best/model.safetensors") ==
        (best_step == 20 ? at_20 : read_bytes(run + "/model.safetensors")));
}

TEST_CASE("train --force over a run that kept its best removes the replaced run's best weights",
          "[cli][train][checkpoint]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run, {"--keep-best"});
  REQUIRE(std::filesystem::exists(run + "/best/model.safetensors"));
  const CliResult r = run_ok(tiny_train_args(run, {"--seed", "5", "--force"}));
  CHECK_FALSE(std::filesystem::exists(run + "/best"));
}
