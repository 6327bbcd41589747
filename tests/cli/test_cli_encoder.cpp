// tinygpt train --arch encoder (a BERT masked LM) and what reads its folder: fill, eval; exact
// resume; the flags of the other families; a Hugging Face BertForMaskedLM folder of bert-base's
// width written by the test.
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/train/bert_files.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

// A small encoder on the toy corpus (a second or two); `changes` replace or add flags.
std::vector<std::string> tiny_encoder_args(const std::string& out, const std::vector<std::string>& changes = {}) {
  return with_changes({"train", "--arch", "encoder", "--out", out, "--layers", "1", "--heads", "2",
                       "--d-model", "16", "--block", "16", "--steps", "20", "--eval-every", "10",
                       "--batch", "4", "--eval-iters", "1", "--threads", "1"},
                      changes);
}

}  // namespace

TEST_CASE("train --arch encoder writes a BertForMaskedLM folder that fill and eval read", "[cli][encoder]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  const CliResult trained = run_ok(tiny_encoder_args(model, {"--json"}));
  INFO(trained.err);
  CHECK(json::parse(trained.out).at("steps") == 20);
  CHECK_THAT(trained.err, Catch::Contains("encoder, 1 layer, 2 heads"));
  CHECK_THAT(trained.err, Catch::Contains("held out: masked loss"));

  const json config = json::parse(read_bytes(committed_path(model, "config.json")));
  CHECK(config.at("model_type") == "bert");
  CHECK(config.at("architectures") == json::array({"BertForMaskedLM"}));
  CHECK(config.at("max_position_embeddings") == 18);  // the window, [CLS] and [SEP]
  CHECK(config.at("tinygpt_mask_probability") == 0.15);
  const json tokenizer = json::parse(read_bytes(committed_path(model, "tokenizer.json")));
  CHECK(tokenizer.at("added_tokens").size() == 5);
  const std::string weights = read_bytes(committed_path(model, "model.safetensors"));
  for (const char* name : {"bert.embeddings.word_embeddings.weight", "bert.encoder.layer.0.attention.self.query.weight",
                           "bert.encoder.layer.0.attention.output.dense.weight",
                           "bert.encoder.layer.0.intermediate.dense.weight", "cls.predictions.bias",
                           "cls.predictions.transform.LayerNorm.weight"}) {
    INFO(name);
    CHECK(weights.find(name) != std::string::npos);
  }

  // eval: masked loss and accuracy under a fixed masking, the same twice.
  const std::string scores = run_ok({"eval", "--model", model, "--json"}).out;
  CHECK(run_ok({"eval", "--model", model, "--json"}).out == scores);
  const json s = json::parse(scores);
  CHECK(s.at("masked_loss").get<double>() > 0.0);
  CHECK(s.at("masked_accuracy").get<double>() >= 0.0);
  CHECK(s.at("masked_accuracy").get<double>() <= 1.0);
  CHECK_FALSE(s.contains("pseudo_perplexity"));
  const json pseudo = json::parse(run_ok({"eval", "--model", model, "--json", "--pseudo"}).out);
  CHECK(pseudo.at("pseudo_perplexity").get<double>() > 1.0);
  CHECK(pseudo.at("masked_loss") == s.at("masked_loss"));

  // fill: the text with each [MASK] replaced, and per mask its top guesses.
  const json filled = json::parse(run_ok({"fill", "--model", model, "--text", "the c[MASK]t s[MASK]t", "--top-k", "3", "--json"}).out);
  REQUIRE(filled.at("masks").size() == 2);
  CHECK(filled.at("masks").at(0).at("position") == 5);
  CHECK(filled.at("masks").at(1).at("position") == 9);
  const json& top = filled.at("masks").at(0).at("top");
  REQUIRE(top.size() == 3);
  CHECK(top.at(0).at("prob").get<double>() >= top.at(1).at("prob").get<double>());
  const std::string text = filled.at("text").get<std::string>();
  CHECK(text.size() == std::string("the cat sat").size());
  CHECK(text.substr(5, 1) == top.at(0).at("token").get<std::string>());
  const std::string plain = run_ok({"fill", "--model", model, "--text", "the c[MASK]t s[MASK]t", "--top-k", "3"}).out;
  CHECK(plain.rfind(text + "\n", 0) == 0);
  CHECK_THAT(plain, Catch::Contains("position 5:"));

  const CliResult no_mask = run_cli({"fill", "--model", model, "--text", "the cat"});
  check_one_line_error(no_mask, {"--text has no [MASK]"});
  CHECK(no_mask.exit_code == 2);
  CHECK(run_cli({"fill", "--model", model, "--text", "[MASK]", "--top-k", "0"}).exit_code == 2);
  const CliResult sampled = run_cli({"sample", "--model", model});
  check_one_line_error(sampled, {"tinygpt fill"});

  // --keep-best keeps the best evaluation's weights in the same layout.
  run_ok({"train", "--resume", model, "--steps", "30", "--keep-best"});
  CHECK(json::parse(read_bytes(committed_path(model + "/best", "config.json"))).at("model_type") == "bert");
}

TEST_CASE("an encoder run resumed ends byte-identical to the uninterrupted one", "[cli][encoder][resume]") {
  ScratchDir dir;
  const std::string a = dir.file("a"), b = dir.file("b");
  const std::vector<std::string> flags = {"--dropout", "0.1", "--pre-ln", "--pos", "rope", "--mask-prob", "0.25",
                                          "--lr-decay-steps", "40"};
  run_ok(tiny_encoder_args(a, flags));
  run_ok({"train", "--resume", a, "--steps", "40", "--threads", "1"});
  run_ok(tiny_encoder_args(b, concat(flags, {"--steps", "40"})));
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json", "tokenizer.json",
                           "trainer_state.json"}) {
    INFO(file);
    CHECK(read_bytes(committed_path(a, file)) == read_bytes(committed_path(b, file)));
  }
  CHECK(log_without_timing(a) == log_without_timing(b));
  const json config = json::parse(read_bytes(committed_path(a, "config.json")));
  CHECK(config.at("model_type") == "tinygpt-encoder");  // pre-LN and RoPE are no BERT
  CHECK(config.at("pre_layer_norm") == true);
  CHECK(config.at("tinygpt_mask_probability") == 0.25);
  // The command that started it, with --resume, continues it; another mask probability is refused.
  run_ok(tiny_encoder_args(a, concat(flags, {"--resume", a, "--steps", "50"})));
  check_one_line_error(run_cli(tiny_encoder_args(a, concat(flags, {"--resume", a, "--steps", "60", "--mask-prob", "0.3"}))),
                       {"--mask-prob 0.3 differs from the run's 0.25"});
  check_one_line_error(run_cli({"train", "--resume", a, "--arch", "gpt", "--steps", "60"}),
                       {"--arch gpt differs from the run's encoder"});
}

TEST_CASE("an encoder refuses the flags of the other families, and they refuse its own", "[cli][encoder][errors]") {
  ScratchDir dir;
  for (const char* flag : {"--kv-heads", "--attention", "--cross"}) {
    const std::string value = flag == std::string("--attention") ? "linear" : flag == std::string("--cross") ? "none" : "1";
    const CliResult r = run_cli(tiny_encoder_args(dir.file("m"), {flag, value}));
    INFO(flag);
    check_one_line_error(r, {flag});
    CHECK(r.exit_code == 2);
  }
  check_one_line_error(run_cli(tiny_encoder_args(dir.file("m"), {"--tokenizer", "bpe:300"})), {"--tokenizer is a GPT's flag"});
  check_one_line_error(run_cli(tiny_encoder_args(dir.file("m"), {"--d-model", "30", "--heads", "4"})),
                       {"--d-model 30 is not divisible by --heads 4"});
  const CliResult bad_prob = run_cli(tiny_encoder_args(dir.file("m"), {"--mask-prob", "0"}));
  CHECK(bad_prob.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(dir.file("m")));
  const CliResult gpt_mask = run_cli(concat({"train", "--out", dir.file("g"), "--mask-prob", "0.2"}, tiny_model_flags()));
  check_one_line_error(gpt_mask, {"--mask-prob needs --arch encoder"});
  CHECK(gpt_mask.exit_code == 2);

  const std::string gpt = dir.file("gpt");
  train_tiny_model(gpt);
  const CliResult fill = run_cli({"fill", "--model", gpt, "--text", "a[MASK]"});
  check_one_line_error(fill, {"not a masked LM"});
  CHECK(fill.exit_code == 2);
  check_one_line_error(run_cli({"eval", "--model", gpt, "--pseudo"}), {"--pseudo", "masked LM"});
}

TEST_CASE("a random BertForMaskedLM of bert-base's width in Hugging Face's layout fills masks",
          "[cli][encoder]") {
  ScratchDir dir;
  const std::string folder = dir.file("bert");
  tinygpt::nn::BertConfig config;
  config.hidden_size = 768;
  config.num_attention_heads = 12;
  config.num_hidden_layers = 1;
  config.intermediate_size = 3072;
  config.max_position_embeddings = 512;
  const tinygpt::data::MaskedLMTokenizer tokenizer = tinygpt::data::MaskedLMTokenizer::fit("abcdefghijklmnopqrstuvwxyz ");
  config.vocab_size = tokenizer.vocab_size();
  const tinygpt::nn::BertForMaskedLM model(config, 7);
  tinygpt::train::save_bert(folder, model, tokenizer);
  std::filesystem::remove(folder + "/checkpoint.json");  // a plain folder, as Hugging Face writes one
  const json config_json = json::parse(read_bytes(folder + "/config.json"));
  CHECK(config_json.at("hidden_size") == 768);
  CHECK(config_json.at("num_attention_heads") == 12);

  const json filled = json::parse(run_ok({"fill", "--model", folder, "--text", "the c[MASK]t", "--json"}).out);
  REQUIRE(filled.at("masks").size() == 1);
  CHECK(filled.at("masks").at(0).at("top").size() == 5);

  std::filesystem::remove(folder + "/tokenizer.json");
  const CliResult no_tokenizer = run_cli({"fill", "--model", folder, "--text", "a[MASK]"});
  check_one_line_error(no_tokenizer, {"has no tokenizer.json"});
  CHECK(no_tokenizer.exit_code == 1);
}

TEST_CASE("heads on an encoder scores its roles and copy heads, ablates them, and its log has their formation",
          "[cli][encoder][heads]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  run_ok(tiny_encoder_args(model));
  const json report = json::parse(run_ok({"heads", "--model", model, "--json", "--ablate"}).out);
  CHECK(report.at("echo_probes") == 16);
  REQUIRE(report.at("heads").size() == 2);
  const std::set<std::string> roles = {"previous-token", "next-token", "self", "sink", "copy", "local", "broad", "mixed"};
  for (const json& head : report.at("heads")) {
    CHECK(roles.count(head.at("role").get<std::string>()) == 1);
    for (const char* key : {"previous_token", "next_token", "self", "sink", "copy", "copy_forward", "copy_backward",
                            "local", "entropy", "ablated_copy_accuracy"}) {
      INFO(key);
      CHECK(head.at(key).get<double>() >= 0.0);
      CHECK(head.at(key).get<double>() <= 1.0);
    }
  }
  const json& copy = report.at("copy");
  for (const char* key : {"second_copy_accuracy", "without_copy_heads", "without_other_heads"}) CHECK(copy.contains(key));
  CHECK(copy.at("copy_heads").get<std::string>() != copy.at("other_heads").get<std::string>());
  const std::string table = run_ok({"heads", "--model", model}).out;
  CHECK_THAT(table, Catch::Contains("second-copy masked accuracy"));
  CHECK_THAT(table, Catch::Contains("copy"));

  // Each evaluation logged the heads' scores and the second-copy accuracy.
  int64_t scored = 0;
  for (const json& record : log_without_timing(model)) {
    if (!record.contains("heads")) continue;
    ++scored;
    CHECK(record.at("heads").size() == 2);
    CHECK(record.contains("second_copy_accuracy"));
  }
  CHECK(scored == 2);

  for (const char* flag : {"--attribute", "--composition", "--pairs"}) {
    INFO(flag);
    std::vector<std::string> args = {"heads", "--model", model, flag};
    if (flag != std::string("--composition")) args.push_back("1");
    const CliResult r = run_cli(args);
    check_one_line_error(r, {flag, "an encoder"});
    CHECK(r.exit_code == 2);
  }
}

TEST_CASE("train --init-from fine-tunes an encoder run or a Hugging Face BERT folder, which resumes",
          "[cli][encoder][fine-tune]") {
  ScratchDir dir;
  const std::string base = dir.file("base"), tuned = dir.file("tuned"), hf = dir.file("hf");
  run_ok(tiny_encoder_args(base));
  // A learning rate so small that the weights stay the checkpoint's as far as fill can tell.
  const auto fine_tune = [](const std::string& from, const std::string& out, const std::vector<std::string>& more) {
    return concat({"train", "--init-from", from, "--out", out, "--steps", "2", "--eval-every", "2", "--eval-iters",
                   "1", "--batch", "4", "--threads", "1", "--lr", "1e-12", "--warmup", "0"},
                  more);
  };
  const auto best_guess = [](const std::string& model) {
    const json filled = json::parse(run_ok({"fill", "--model", model, "--text", "the c[MASK]t", "--json"}).out);
    return filled.at("masks").at(0).at("top").at(0).at("token").get<std::string>();
  };
  // The family is the checkpoint's: no --arch needed.
  const CliResult r = run_ok(fine_tune(base, tuned, {}));
  CHECK_THAT(r.err, Catch::Contains("fine-tuning the weights of"));
  CHECK_THAT(r.err, Catch::Contains("(encoder, 1 layer"));
  CHECK(best_guess(tuned) == best_guess(base));
  CHECK(read_bytes(committed_path(tuned, "config.json")) == read_bytes(committed_path(base, "config.json")));
  CHECK(read_bytes(committed_path(tuned, "tokenizer.json")) == read_bytes(committed_path(base, "tokenizer.json")));
  const json state = json::parse(read_bytes(committed_path(tuned, "trainer_state.json")));
  CHECK(state.at("step") == 2);
  CHECK(state.at("init_from").at("step") == 20);
  run_ok({"train", "--resume", tuned, "--steps", "4"});
  CHECK(json::parse(read_bytes(committed_path(tuned, "trainer_state.json"))).at("init_from") == state.at("init_from"));

  // Hugging Face's files alone, with --arch said and another masking and dropout.
  std::filesystem::create_directories(hf);
  for (const char* name : {"model.safetensors", "config.json", "tokenizer.json"}) {
    std::filesystem::copy_file(committed_path(base, name), hf + "/" + name);
  }
  const std::string from_hf = dir.file("from_hf");
  run_ok(fine_tune(hf, from_hf, {"--arch", "encoder", "--mask-prob", "0.3", "--dropout", "0.1"}));
  const json config = json::parse(read_bytes(committed_path(from_hf, "config.json")));
  CHECK(config.at("tinygpt_mask_probability") == 0.3);
  CHECK(config.at("hidden_dropout_prob") == 0.1);
  CHECK(json::parse(read_bytes(committed_path(from_hf, "trainer_state.json"))).at("init_from").at("step") == 0);
  CHECK(best_guess(from_hf) == best_guess(base));
}

TEST_CASE("train --init-from of an encoder refuses shape flags, another family and text outside its vocabulary",
          "[cli][encoder][fine-tune][errors]") {
  ScratchDir dir;
  const std::string base = dir.file("base"), gpt = dir.file("gpt"), tuned = dir.file("tuned");
  run_ok(tiny_encoder_args(base));
  train_tiny_model(gpt);
  const DirSnapshot before = snapshot(base);
  const std::vector<std::string> args = {"train", "--init-from", base, "--out", tuned, "--steps", "2"};
  for (const std::vector<std::string>& flag :
       {std::vector<std::string>{"--layers", "2"}, {"--block", "8"}, {"--pos", "rope"}, {"--pre-ln"}}) {
    const CliResult r = run_cli(concat(args, flag));
    check_one_line_error(r, {flag[0], "keeps the shape of " + base});
    CHECK(r.exited_with(2));
  }
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--arch", "gpt"}, "--init-from " + base + " holds an encoder; drop --arch or pass --arch encoder"},
      {{"--tokenizer", "bpe:300"}, "--tokenizer is a GPT's flag"},
      {{"--cross", "none"}, "--cross needs --arch encoder-decoder"}};
  for (const auto& [flags, message] : refused) {
    const CliResult r = run_cli(concat(args, flags));
    check_one_line_error(r, {message});
    CHECK(r.exited_with(2));
  }
  const CliResult gpt_as_encoder = run_cli({"train", "--arch", "encoder", "--init-from", gpt, "--out", tuned});
  check_one_line_error(gpt_as_encoder, {"holds a GPT; drop --arch or pass --arch gpt"});
  CHECK(gpt_as_encoder.exited_with(2));
  const std::string text = dir.file("text.txt");
  write_bytes(text, std::string(200, 'a') + "Zebra\n" + std::string(200, 'b'));
  const CliResult foreign = run_cli(concat(args, {"--data", text}));
  check_one_line_error(foreign, {text, "'Z'", "vocabulary of " + base});
  CHECK(foreign.exited_with(1));
  const std::string vocab_only = dir.file("vocab_only");
  std::filesystem::create_directories(vocab_only);
  for (const char* name : {"model.safetensors", "config.json"}) {
    std::filesystem::copy_file(committed_path(base, name), vocab_only + "/" + name);
  }
  const CliResult no_tokenizer = run_cli({"train", "--init-from", vocab_only, "--out", tuned});
  check_one_line_error(no_tokenizer, {"has no tokenizer.json"});
  CHECK(no_tokenizer.exited_with(1));
  CHECK_FALSE(std::filesystem::exists(tuned));
  CHECK(snapshot(base) == before);
}

TEST_CASE("train --arch encoder refuses a batch far beyond the machine's memory before allocating",
          "[cli][encoder][memory]") {
  ScratchDir dir;
  const std::string out = dir.file("run");
  const CliResult r = run_cli({"train", "--arch", "encoder", "--out", out, "--batch", "100000"});
  check_one_line_error(r, {"this run needs about", "GiB available; lower --batch/--block (activations)"});
  CHECK(r.exited_with(1));
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("an encoder with BigBird attention saves its blocks, resumes byte-identically and its "
          "folder runs eval, fill and heads", "[cli][encoder][bigbird][resume]") {
  ScratchDir dir;
  const std::string a = dir.file("a"), b = dir.file("b");
  // --block 16: 18 positions with [CLS] and [SEP], six blocks of 3.
  const std::vector<std::string> bigbird = {"--attention", "bigbird", "--window", "2", "--global-tokens", "1",
                                            "--random-blocks", "1", "--block-size", "3", "--steps", "10"};
  run_ok(tiny_encoder_args(a, bigbird));
  run_ok({"train", "--resume", a, "--steps", "20", "--threads", "1"});
  run_ok(tiny_encoder_args(b, concat(bigbird, {"--steps", "20"})));
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json"}) {
    INFO(file);
    CHECK(read_bytes(committed_path(a, file)) == read_bytes(committed_path(b, file)));
  }
  const json config = json::parse(read_bytes(committed_path(a, "config.json")));
  CHECK(config.at("model_type") == "tinygpt-encoder");  // BERT has no BigBird
  const json& attention = config.at("tinygpt_encoder_attention");
  CHECK(attention.at("attention_type") == "bigbird");
  CHECK(attention.at("sliding_window") == 2);
  CHECK(attention.at("bigbird_block_size") == 3);
  CHECK(attention.at("bigbird_random_key_blocks").size() == 6);

  CHECK(json::parse(run_ok({"eval", "--model", a, "--json"}).out).at("masked_loss").get<double>() > 0.0);
  CHECK(json::parse(run_ok({"fill", "--model", a, "--text", "the c[MASK]t", "--json"}).out).at("masks").size() == 1);
  CHECK(json::parse(run_ok({"heads", "--model", a, "--json"}).out).at("heads").size() == 2);

  check_one_line_error(run_cli(tiny_encoder_args(a, concat(bigbird, {"--resume", a, "--steps", "30", "--window", "3"}))),
                       {"--window 3 differs from the run's 2"});
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {concat(bigbird, {"--block-size", "4"}), "--block-size 4 does not divide the encoder's 18 positions"},
      {concat(bigbird, {"--random-blocks", "7"}), "--random-blocks 7 is more than the encoder's 6 blocks"},
      {{"--attention", "window", "--window", "2"}, "--attention window is a GPT's; --arch encoder does not take it"}};
  for (const auto& [flags, message] : refused) {
    INFO(message);
    const CliResult r = run_cli(tiny_encoder_args(dir.file("m"), flags));
    check_one_line_error(r, {message});
    CHECK(r.exit_code == 2);
  }
  check_one_line_error(run_cli(tiny_encoder_args(dir.file("m"), {"--block-size", "3"})),
                       {"--block-size needs --attention bigbird"});
  CHECK_FALSE(std::filesystem::exists(dir.file("m")));
}
