// train --no-attention-scale: a GPT whose attention takes the softmax of raw dot products, recorded
// in config.json (scale_attn_weights false, model_type tinygpt), resumed and sampled like any other.
#include "cli/cli_helpers.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

TEST_CASE("train --no-attention-scale records the unscaled attention, resumes and samples",
          "[cli][train][scale][slow]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run, {"--steps", "10", "--no-attention-scale"});
  const json config = json::parse(read_bytes(run + "/config.json"));
  CHECK(config["scale_attn_weights"] == false);
  CHECK(config["model_type"] == "tinygpt");  // GPT-2's readers would scale the scores
  run_ok(concat(tiny_train_args(run, {"--steps", "20", "--no-attention-scale"}), {"--resume", run}));
  CHECK(saved_step(run) == 20);
  run_ok({"sample", "--model", run, "--tokens", "5", "--seed", "1"});

  // A default run still claims GPT-2 and scales its scores.
  const std::string plain = dir.file("plain");
  train_tiny_model(plain);
  CHECK(json::parse(read_bytes(plain + "/config.json"))["scale_attn_weights"] == true);
  const CliResult changed = run_cli(concat(tiny_train_args(plain, {"--steps", "30", "--no-attention-scale"}),
                                           {"--resume", plain}));
  CHECK(changed.exited_with(2));
  check_one_line_error(changed, {"--no-attention-scale"});
}

TEST_CASE("train refuses --no-attention-scale where there is no scale to leave out", "[cli][train][scale]") {
  ScratchDir dir;
  const CliResult linear = run_cli(tiny_train_args(dir.file("a"), {"--attention", "linear", "--no-attention-scale"}));
  CHECK(linear.exited_with(2));
  check_one_line_error(linear, {"--no-attention-scale"});
  const CliResult seq2seq = run_cli(tiny_train_args(dir.file("b"), {"--arch", "encoder-decoder", "--no-attention-scale"}));
  CHECK(seq2seq.exited_with(2));
  check_one_line_error(seq2seq, {"--no-attention-scale"});
  CHECK(dir.entries().empty());
}
