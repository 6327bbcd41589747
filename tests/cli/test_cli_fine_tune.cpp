// train --init-from: a new run (step 0, new optimiser and schedule) from a checkpoint's weights.
#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Greedy text of the model in `dir`: equal for equal weights.
std::string greedy(const std::string& dir) {
  return run_ok({"sample", "--model", dir, "--tokens", "40", "--temperature", "0", "--prompt", "ab"}).out;
}

// A fine-tune run of `steps` steps from `from` into `out`, with a learning rate so small that
// its weights stay the checkpoint's as far as greedy decoding can tell.
std::vector<std::string> fine_tune_args(const std::string& from, const std::string& out,
                                        const std::vector<std::string>& more = {}) {
  return concat({"train", "--init-from", from, "--out", out, "--steps", "2", "--eval-every", "2",
                 "--eval-iters", "1", "--batch", "4", "--threads", "1", "--lr", "1e-12",
                 "--warmup", "0"},
                more);
}

}  // namespace

TEST_CASE("train --init-from starts a new run at step 0 from a run's weights and records where they came from",
          "[cli][fine-tune]") {
  ScratchDir dir;
  const std::string base = dir.file("base"), tuned = dir.file("tuned");
  train_tiny_model(base);
  const CliResult r = run_ok(fine_tune_args(base, tuned));
  CHECK_THAT(r.err, Catch::Matchers::Contains("fine-tuning the weights of " + fs::canonical(base).string() +
                                              " (trained 20 steps)"));
  CHECK(greedy(tuned) == greedy(base));
  const json state = json::parse(read_bytes(tuned + "/trainer_state.json"));
  CHECK(state["step"] == 2);  // its own steps, from 0
  CHECK(state["init_from"]["dir"] == fs::canonical(base).string());
  CHECK(state["init_from"]["step"] == 20);
  CHECK(state["init_from"]["model_sha256"].get<std::string>().size() == 64);
  CHECK(state["options"]["lr"] == 1e-12);  // the run's settings are the flags'
  CHECK(log_without_timing(tuned).front()["step"] == 1);
  // The model's settings are the checkpoint's; the fine-tuned run resumes like any other.
  json base_config = json::parse(read_bytes(base + "/config.json"));
  CHECK(json::parse(read_bytes(tuned + "/config.json")) == base_config);
  run_ok({"train", "--resume", tuned, "--steps", "4"});
  CHECK(json::parse(read_bytes(tuned + "/trainer_state.json"))["init_from"] == state["init_from"]);
}

TEST_CASE("train --init-from reads a folder of Hugging Face files (no run state) and may change dropout",
          "[cli][fine-tune]") {
  ScratchDir dir;
  const std::string base = dir.file("base"), hf = dir.file("hf"), tuned = dir.file("tuned");
  train_tiny_model(base);
  fs::create_directories(hf);
  for (const char* name : {"model.safetensors", "config.json", "tokenizer.json"}) {
    fs::copy_file(base + "/" + name, hf + "/" + name);
  }
  const CliResult r = run_ok(fine_tune_args(hf, tuned, {"--dropout", "0.25"}));
  CHECK_THAT(r.err, !Catch::Matchers::Contains("trained"));
  const json state = json::parse(read_bytes(tuned + "/trainer_state.json"));
  CHECK(state["init_from"]["step"] == 0);
  const json config = json::parse(read_bytes(tuned + "/config.json"));
  CHECK(config["resid_pdrop"] == 0.25);
  CHECK(config["n_embd"] == 16);
  CHECK(greedy(tuned) == greedy(base));  // dropout is off when sampling
}

TEST_CASE("train --init-from refuses text outside the checkpoint's vocabulary, shape flags and --resume",
          "[cli][fine-tune][errors]") {
  ScratchDir dir;
  const std::string base = dir.file("base"), tuned = dir.file("tuned");
  train_tiny_model(base);
  const DirSnapshot before = snapshot(base);
  const std::string text = dir.file("text.txt");
  write_bytes(text, std::string(200, 'a') + "Zebra\n" + std::string(200, 'b'));
  const CliResult foreign = run_cli(fine_tune_args(base, tuned, {"--data", text}));
  check_one_line_error(foreign, {text, "'Z'", "vocabulary of " + base});
  CHECK(foreign.exited_with(1));
  for (const std::vector<std::string>& flag :
       {std::vector<std::string>{"--layers", "2"}, {"--d-model", "16"}, {"--block", "8"},
        {"--pos", "rope"}, {"--kv-heads", "1"}, {"--heads", "2"}, {"--resume", base}}) {
    const CliResult r = run_cli(fine_tune_args(base, tuned, flag));
    check_one_line_error(r, {flag[0], "tinygpt train --help"});
    CHECK(r.exited_with(2));
  }
  check_one_line_error(run_cli(fine_tune_args(base, base, {"--force"})), {base, "another directory"});
  check_one_line_error(run_cli(fine_tune_args(dir.file("none"), tuned)), {dir.file("none")});
  CHECK_FALSE(fs::exists(tuned));
  CHECK(snapshot(base) == before);
}
