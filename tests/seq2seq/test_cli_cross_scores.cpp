// train --arch encoder-decoder --cross-score general|concat|additive and --cross none: each
// trains, resumes byte-identically, and eval, sample and heads read it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

TEST_CASE("each cross-attention score and the decoder without one train, resume byte-identically and draw their heads",
          "[cli][seq2seq][cross][slow]") {
  ScratchDir dir;
  const std::vector<std::pair<std::string, std::string>> variants{
      {"--cross-score", "general"}, {"--cross-score", "concat"}, {"--cross-score", "additive"}, {"--cross", "none"}};
  for (const auto& [flag, value] : variants) {
    INFO(flag << " " << value);
    const bool none = value == "none";
    const std::string resumed = dir.file(value + "_resumed"), straight = dir.file(value);
    const std::vector<std::string> run{flag, value, "--eval-every", "4", "--lr-decay-steps", "8"};
    run_ok(tiny_seq2seq_args(resumed, concat(run, {"--steps", "4"})));
    run_ok({"train", "--resume", resumed, "--steps", "8", "--threads", "1"});
    const CliResult trained = run_ok(tiny_seq2seq_args(straight, concat(run, {"--steps", "8"})));
    CHECK_THAT(trained.err, Catch::Contains(none ? "no cross-attention" : value + " cross-attention"));
    for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
      INFO(file);
      CHECK(read_bytes(committed_path(resumed, file)) == read_bytes(committed_path(straight, file)));
    }
    const json config = json::parse(read_bytes(committed_path(straight, "config.json")));
    CHECK(config.value("tinygpt_cross_attention", true) == !none);
    CHECK(config.value("tinygpt_cross_score", "dot") == (none ? "dot" : value));
    const std::string weights = read_bytes(committed_path(straight, "model.safetensors"));
    CHECK((weights.find("encoder_attn") == std::string::npos) == none);

    const json scores = json::parse(run_ok({"eval", "--model", straight, "--json"}).out);
    CHECK(scores.contains("exact_match"));
    CHECK_FALSE(run_ok({"sample", "--model", straight, "--source", "abcdefgh"}).out.empty());
    const json heads = json::parse(run_ok({"heads", "--model", straight, "--json", "--pairs", "20", "--ablate"}).out);
    CHECK(heads.at("cross_attention").size() == (none ? 0u : 2u));
    CHECK(std::filesystem::exists(straight + "/heads/decoder_layer0.png"));
    CHECK(std::filesystem::exists(straight + "/heads/cross_layer0.png") == !none);
  }
}

TEST_CASE("train refuses --cross and --cross-score where they mean nothing", "[cli][seq2seq][cross][errors]") {
  ScratchDir dir;
  const CliResult both = run_cli(tiny_seq2seq_args(dir.file("m"), {"--cross", "none", "--cross-score", "additive"}));
  check_one_line_error(both, {"--cross-score additive scores a cross-attention the decoder does not have"});
  CHECK(both.exit_code == 2);
  const CliResult gpt = run_cli({"train", "--out", dir.file("g"), "--cross-score", "general", "--steps", "1"});
  check_one_line_error(gpt, {"--cross-score needs --arch encoder-decoder"});
  CHECK(gpt.exit_code == 2);
  const CliResult unknown = run_cli(tiny_seq2seq_args(dir.file("m"), {"--cross-score", "cosine"}));
  CHECK(unknown.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(dir.file("m")));
  const std::string model = dir.file("additive");
  run_ok(tiny_seq2seq_args(model, {"--cross-score", "additive", "--steps", "2", "--eval-every", "2"}));
  check_one_line_error(run_cli({"train", "--resume", model, "--cross-score", "dot", "--steps", "4"}),
                       {"--cross-score dot differs from the run's additive"});
}
