// tinygpt train --arch encoder-decoder and what reads its checkpoint: eval, sample --source,
// heads; bad pair data; flags that belong to the other architecture.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

json parse_json(const std::string& text) { return json::parse(text); }

}  // namespace

TEST_CASE("train --arch encoder-decoder writes a BART-style checkpoint that eval, sample and heads read",
          "[cli][seq2seq]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  const CliResult trained = run_ok(tiny_seq2seq_args(model, {"--json"}));
  const json summary = parse_json(trained.out);
  CHECK(summary.at("data") == "builtin:reverse");
  CHECK(summary.at("steps") == 40);
  INFO(trained.err);
  CHECK_THAT(trained.err, Catch::Contains("encoder-decoder, 1 + 1 layers"));
  CHECK_THAT(trained.err, Catch::Contains("held-out: exact match"));

  const json config = parse_json(read_bytes(committed_path(model, "config.json")));
  CHECK(config.at("model_type") == "tinygpt-encoder-decoder");
  CHECK(config.at("architectures") == json::array({"TinyGPTForConditionalGeneration"}));
  for (const char* key : {"d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
                          "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim",
                          "max_position_embeddings", "vocab_size", "pad_token_id", "bos_token_id",
                          "eos_token_id", "decoder_start_token_id", "activation_function"}) {
    INFO(key);
    CHECK(config.contains(key));
  }
  CHECK(config.at("d_model") == 32);
  CHECK(config.at("encoder_ffn_dim") == 128);
  CHECK(config.at("max_position_embeddings") == 20);
  const json tokenizer = parse_json(read_bytes(committed_path(model, "tokenizer.json")));
  CHECK(tokenizer.at("added_tokens").size() == 3);
  CHECK(tokenizer.at("model").at("vocab").at("</s>") == config.at("eos_token_id"));
  const std::string weights = read_bytes(committed_path(model, "model.safetensors"));
  for (const char* name : {"model.shared.weight", "model.encoder.embed_positions.weight",
                           "model.encoder.layers.0.self_attn.q_proj.weight",
                           "model.decoder.layers.0.encoder_attn.out_proj.bias",
                           "model.decoder.layers.0.encoder_attn_layer_norm.weight",
                           "model.decoder.layer_norm.weight"}) {
    CHECK(weights.find(name) != std::string::npos);
  }
  // Each evaluation logs held-out accuracy and every cross-attention head's alignment.
  const auto log = log_without_timing(model);
  const auto eval = std::find_if(log.begin(), log.end(), [](const json& r) { return r.contains("val_loss"); });
  REQUIRE(eval != log.end());
  CHECK(eval->contains("exact_match"));
  CHECK(eval->contains("char_accuracy"));
  CHECK(eval->at("cross_attention").size() == 2);
  CHECK(std::filesystem::exists(model + "/alignment_over_time.png"));

  const json scores = parse_json(run_ok({"eval", "--model", model, "--json"}).out);
  for (const char* key : {"loss", "perplexity", "tokens", "pairs", "exact_match", "char_accuracy"}) {
    INFO(key);
    CHECK(scores.contains(key));
  }
  CHECK(scores.at("pairs") == 2000);
  CHECK(scores.at("char_accuracy").get<double>() >= scores.at("exact_match").get<double>());

  const json sampled = parse_json(run_ok({"sample", "--model", model, "--source", "abcdefgh", "--json"}).out);
  CHECK(sampled.at("source") == "abcdefgh");
  CHECK(sampled.at("temperature") == 0.0);  // greedy by default
  CHECK(sampled.at("text").get<std::string>().size() <= 19);  // the decoder's positions
  CHECK(run_ok({"sample", "--model", model, "--source", "abcdefgh"}).out ==
        sampled.at("text").get<std::string>() + "\n");
  // bf16 generation keeps a GPT's weights in bf16; an encoder-decoder refuses it in one line.
  const CliResult bf16 = run_cli({"sample", "--model", model, "--source", "abcdefgh", "--precision", "bf16"});
  check_one_line_error(bf16, {"--precision", "encoder-decoder"});

  const json heads = parse_json(run_ok({"heads", "--model", model, "--json", "--pairs", "50", "--ablate"}).out);
  CHECK(heads.at("pairs") == 50);
  CHECK(heads.at("encoder").size() == 2);
  CHECK(heads.at("decoder").size() == 2);
  REQUIRE(heads.at("cross_attention").size() == 2);
  for (const json& h : heads.at("cross_attention")) {
    CHECK(h.at("alignment").get<double>() >= 0.0);
    CHECK(h.at("alignment").get<double>() <= 1.0 + 1e-6);
    CHECK(h.contains("ablated_exact_match_drop"));
  }
  CHECK(heads.contains("ablated_aligned_exact_match"));
  // Heatmaps of the first held-out pair: a grid per layer of each attention, cross-attention
  // with the target down and the source across.
  for (const char* name : {"encoder_layer0.png", "decoder_layer0.png", "cross_layer0.png"}) {
    INFO(name);
    CHECK(std::filesystem::exists(model + "/heads/" + name));
  }
  CHECK(heads.at("heatmaps").size() == 3);

  // The end of training wrote the explorer page; heads --html writes it for the same pair: the
  // encoder's self-attention on the source (not causal) and the cross-attention view.
  CHECK(std::filesystem::exists(model + "/report.html"));
  const std::string page = dir.file("page.html");
  run_ok({"heads", "--model", model, "--html", page, "--pairs", "50", "--ablate", "--json"});
  const json data = explorer_data(page);
  CHECK(data.at("causal") == false);
  const json& cross = data.at("cross");
  const auto source = data.at("tokens").get<std::vector<std::string>>();
  const auto outputs = cross.at("output_tokens").get<std::vector<std::string>>();
  REQUIRE_FALSE(source.empty());
  REQUIRE(outputs.size() == source.size() + 1);  // builtin:reverse: the source reversed, then </s>
  CHECK(outputs.back() == "</s>");
  for (size_t i = 0; i + 1 < outputs.size(); ++i) {
    INFO(i);
    CHECK(outputs[i] == source[source.size() - 1 - i]);
    CHECK(cross.at("aligned").at(i) == json::array({source.size() - 1 - i}));
  }
  CHECK(cross.at("aligned").back().empty());
  CHECK(cross.at("attention").at("t") == outputs.size());
  CHECK(cross.at("attention").at("s") == source.size());
  REQUIRE(cross.at("heads").size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const json& shown = cross.at("heads").at(i).at("scores");
    const json& reported = heads.at("cross_attention").at(i);
    CHECK(shown.at("alignment").get<double>() == Approx(reported.at("alignment").get<double>()).margin(1e-4));
    CHECK(shown.at("ablated_exact_match_drop").get<double>() ==
          Approx(reported.at("ablated_exact_match_drop").get<double>()).margin(1e-4));
  }
  CHECK(cross.at("exact_match").size() == 2);  // each evaluation's
  CHECK(cross.at("formation").size() == 2);
  CHECK(data.at("heads").size() == 2);          // the encoder's
  CHECK(data.at("heads").at(0).at("scores").contains("next_token"));

  // Resumed, it continues; given the other architecture, it is refused.
  CHECK(run_ok(tiny_seq2seq_args(model, {"--resume", model, "--steps", "60"})).exit_code == 0);
  CHECK(saved_step(model) == 60);
  check_one_line_error(run_cli({"train", "--resume", model, "--arch", "gpt", "--steps", "80"}),
                       {"--arch gpt differs from the run's encoder-decoder"});
}

TEST_CASE("an encoder-decoder refuses the flags of a GPT and a GPT those of an encoder-decoder",
          "[cli][seq2seq][errors]") {
  ScratchDir dir;
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--pos", "rope"}, {"--kv-heads", "1"}, {"--attention", "linear"}, {"--init-from", "x"}}) {
    const CliResult r = run_cli(tiny_seq2seq_args(dir.file("m"), {flag, value}));
    check_one_line_error(r, {flag, "--arch encoder-decoder does not take it"});
    CHECK(r.exit_code == 2);
  }
  check_one_line_error(run_cli(tiny_seq2seq_args(dir.file("m"), {"--d-model", "30", "--heads", "4"})),
                       {"--d-model 30 is not divisible by --heads 4"});
  CHECK_FALSE(std::filesystem::exists(dir.file("m")));
  const std::string gpt = dir.file("gpt");
  train_tiny_model(gpt);
  const CliResult source = run_cli({"sample", "--model", gpt, "--source", "abc"});
  check_one_line_error(source, {"--source", "is a GPT"});
  CHECK(source.exit_code == 2);
  check_one_line_error(run_cli({"heads", "--model", gpt, "--pairs", "5"}), {"--pairs", "is a GPT"});
}

TEST_CASE("bad pair data is refused naming its line, and leaves nothing", "[cli][seq2seq][errors]") {
  ScratchDir dir;
  const std::vector<std::pair<std::string, std::string>> cases{
      {"abc\tcba\nno tab here\n", ":2: no tab between source and target"},
      {"abc\tcba\n\tcba\n", ":2: empty source"},
      {"abc\tcba\nabc\t\n", ":2: empty target"},
      {"abc\tcba\na\tb\tc\n", ":2: more than one tab"},
      {"abc\tcba\n" + std::string(30, 'x') + "\tx\n", ":2: a source of 30 and a target of 1 characters do not fit 20 positions"},
  };
  for (const auto& [text, fragment] : cases) {
    INFO(fragment);
    const std::string data = dir.file("pairs.tsv");
    write_bytes(data, text);
    const CliResult r = run_cli(tiny_seq2seq_args(dir.file("m"), {"--data", data, "--val-fraction", "0"}));
    check_one_line_error(r, {"pairs.tsv" + fragment});
    CHECK_FALSE(std::filesystem::exists(dir.file("m")));
  }
  const CliResult unknown = run_cli(tiny_seq2seq_args(dir.file("m"), {"--data", "builtin:nope"}));
  check_one_line_error(unknown, {"unknown built-in data builtin:nope"});
}

TEST_CASE("a file of pairs trains an encoder-decoder, its held-out pairs the last lines", "[cli][seq2seq]") {
  ScratchDir dir;
  std::string text;
  for (int i = 0; i < 40; ++i) text += std::string(1, static_cast<char>('a' + i % 7)) + "xy\tyx" + std::string(1, static_cast<char>('a' + i % 7)) + "\n";
  const std::string data = dir.file("pairs.tsv");
  write_bytes(data, text);
  const std::string model = dir.file("model");
  run_ok(tiny_seq2seq_args(model, {"--data", data, "--steps", "20"}));
  const json scores = parse_json(run_ok({"eval", "--model", model, "--json"}).out);
  CHECK(scores.at("pairs") == 4);  // 10% of 40
  // No known alignment for a file: the heads report roles and says so.
  const json heads = parse_json(run_ok({"heads", "--model", model, "--json"}).out);
  CHECK(heads.at("cross_attention").empty());
  CHECK(heads.at("encoder").size() == 2);
  // Its page shows the cross-attention and each head's ablation, with no alignment score.
  const std::string page = dir.file("page.html");
  run_ok({"heads", "--model", model, "--html", page, "--ablate"});
  const json cross = explorer_data(page).at("cross");
  CHECK(cross.at("aligned").empty());
  REQUIRE(cross.at("heads").size() == 2);
  CHECK_FALSE(cross.at("heads").at(0).at("scores").contains("alignment"));
  CHECK(cross.at("heads").at(0).at("scores").contains("ablated_exact_match_drop"));
}

TEST_CASE("the default encoder-decoder learns builtin:reverse: held-out exact match at least 0.99 with an aligned head",
          "[cli][seq2seq][slow]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  CliOptions slow;
  slow.timeout = std::chrono::minutes(8);  // ~80 s alone on 2 cores
  const CliResult trained = run_cli({"train", "--arch", "encoder-decoder", "--out", model}, slow);
  INFO(trained.describe());
  REQUIRE(trained.exited_with(0));
  const json scores = parse_json(run_ok({"eval", "--model", model, "--json"}).out);
  CHECK(scores.at("exact_match").get<double>() >= 0.99);
  const json heads = parse_json(run_ok({"heads", "--model", model, "--json", "--ablate"}).out);
  double best = 0.0;
  for (const json& h : heads.at("cross_attention")) best = std::max(best, h.at("alignment").get<double>());
  CHECK(best >= 0.8);
  CHECK(heads.at("exact_match").get<double>() - heads.at("ablated_aligned_exact_match").get<double>() >= 0.5);
}
