// tinygpt train --pos / --kv-heads write the variant into config.json (and wpe only for learned
// positions); eval --block runs past the training context for every scheme but learned, which
// it refuses in one clear line; sample --verbose reports the KV cache size.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

TEST_CASE("train --pos and --kv-heads: config.json, longer eval windows, KV cache size",
          "[cli][position][gqa]") {
  ScratchDir dir;
  for (const std::string pos : {"learned", "sinusoidal", "rope", "alibi", "none"}) {
    CAPTURE(pos);
    const std::string model = dir.file("model_" + pos);
    train_tiny_model(model, {"--pos", pos, "--kv-heads", "1"});
    const json config = json::parse(read_bytes(model + "/config.json"));
    CHECK(config.at("position_embedding_type") == pos);
    CHECK(config.at("num_key_value_heads") == 1);
    // GQA (and every position scheme but learned) is not GPT-2: config.json says its own type.
    CHECK(config.at("model_type") == "tinygpt");
    CHECK(config.at("architectures") == json::array({"TinyGPTForCausalLM"}));
    CHECK(config.at("rope_theta") == 10000.0);
    CHECK((read_bytes(model + "/model.safetensors").find("transformer.wpe.weight") != std::string::npos) ==
          (pos == "learned"));
    const std::vector<std::string> eval = {"eval", "--model", model, "--data", "builtin:toy",
                                           "--block", "32", "--json", "--threads", "1"};
    if (pos == "learned") {
      check_one_line_error(run_cli(eval), {"--block 32", "context 16", "learned"});
    } else {
      CHECK(json::parse(run_ok(eval).out).at("loss").get<double>() > 0);
    }
    const CliResult sample = run_ok({"sample", "--model", model, "--tokens", "40", "--verbose"});
    // 2 x 1 layer x 1 kv head x 16 positions x head width 8 x 4 bytes
    CHECK_THAT(sample.err, Catch::Matchers::Contains("KV cache: 1024 bytes"));
  }
  check_one_line_error(run_cli(tiny_train_args(dir.file("bad"), {"--kv-heads", "3"})),
                       {"--kv-heads 3", "--heads 2"});
}

TEST_CASE("config.json claims GPT-2 only for what Hugging Face's GPT-2 loads to the same logits, and "
          "older checkpoints that claimed it for every variant still load", "[cli][position][gqa]") {
  ScratchDir dir;
  const std::vector<std::pair<std::vector<std::string>, bool>> variants = {
      {{"--pos", "learned"}, true},     {{"--pos", "learned", "--kv-heads", "1"}, false},
      {{"--pos", "rope"}, false},       {{"--pos", "alibi"}, false},
      {{"--pos", "sinusoidal"}, false}, {{"--pos", "none"}, false}};
  for (size_t i = 0; i < variants.size(); ++i) {
    const auto& [flags, gpt2] = variants[i];
    const std::string model = dir.file("m" + std::to_string(i));
    INFO(model << " " << flags[1]);
    train_tiny_model(model, flags);
    json config = json::parse(read_bytes(model + "/config.json"));
    CHECK(config.at("model_type") == (gpt2 ? "gpt2" : "tinygpt"));
    CHECK(config.at("architectures") ==
          json::array({gpt2 ? "GPT2LMHeadModel" : "TinyGPTForCausalLM"}));
    const std::string before = run_ok({"sample", "--model", model, "--tokens", "8", "--temperature", "0"}).out;
    // As a checkpoint of the previous version wrote it; the checkpoint manifest is resealed.
    config["model_type"] = "gpt2";
    config["architectures"] = json::array({"GPT2LMHeadModel"});
    write_bytes(model + "/config.json", config.dump(2));
    std::filesystem::remove(model + "/checkpoint.json");
    CHECK(run_ok({"sample", "--model", model, "--tokens", "8", "--temperature", "0"}).out == before);
  }
}

TEST_CASE("train --attention window: config.json keys, kept on resume, eval and heads run, refusals",
          "[cli][window]") {
  ScratchDir dir;
  const std::string model = dir.file("window");
  train_tiny_model(model, {"--attention", "window", "--window", "4", "--global-tokens", "1"});
  json config = json::parse(read_bytes(model + "/config.json"));
  CHECK(config.at("attention_type") == "sliding_window");
  CHECK(config.at("sliding_window") == 4);
  CHECK(config.at("global_tokens") == 1);
  CHECK(config.at("model_type") == "tinygpt");  // GPT-2 has no window
  // eval, heads and sample run on a window model; sample --verbose names the pattern.
  CHECK(json::parse(run_ok({"eval", "--model", model, "--data", "builtin:toy", "--json"}).out)
            .at("loss")
            .get<double>() > 0);
  run_ok({"heads", "--model", model});
  // The ring cache holds W + G = 5 positions however many are generated.
  CHECK_THAT(run_ok({"sample", "--model", model, "--tokens", "50", "--verbose"}).err,
             Catch::Matchers::Contains("window 4 + 1 global tokens attention") &&
                 Catch::Matchers::Contains("at 5 positions"));
  run_ok({"train", "--resume", model, "--steps", "30"});
  CHECK(json::parse(read_bytes(committed_path(model, "config.json"))).at("sliding_window") == 4);
  check_one_line_error(run_cli({"train", "--resume", model, "--steps", "40", "--window", "5"}),
                       {"--window 5", "4"});

  check_one_line_error(run_cli(tiny_train_args(dir.file("a"), {"--attention", "window"})),
                       {"--attention window", "--window"});
  check_one_line_error(run_cli(tiny_train_args(dir.file("b"), {"--window", "3"})),
                       {"--window", "--attention window"});

  // A config written before the patterns (no attention_type) is full attention; Mistral's way
  // (sliding_window alone) is a window; a type this tinygpt lacks is refused naming the key.
  const std::string full = dir.file("full");
  train_tiny_model(full);
  std::filesystem::remove(full + "/checkpoint.json");
  json plain = json::parse(read_bytes(full + "/config.json"));
  CHECK(plain.at("attention_type") == "full");
  plain.erase("attention_type");
  write_bytes(full + "/config.json", plain.dump(2));
  run_ok({"sample", "--model", full, "--tokens", "4"});
  std::filesystem::remove(model + "/checkpoint.json");
  config.erase("attention_type");
  write_bytes(model + "/config.json", config.dump(2));
  const std::string greedy = run_ok({"sample", "--model", model, "--tokens", "8", "--temperature", "0"}).out;
  CHECK(greedy.size() > 0);
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"attention_type", "linear"}, {"sparse_stride", 4}, {"sliding_window", 0}}) {
    json bad = config;
    bad[key] = value;
    write_bytes(model + "/config.json", bad.dump(2));
    check_one_line_error(run_cli({"sample", "--model", model, "--tokens", "4"}), {"config.json", key});
  }
}

TEST_CASE("train --attention strided: config.json keys, kept on resume, eval and heads run, refusals",
          "[cli][strided]") {
  ScratchDir dir;
  const std::string model = dir.file("strided");
  train_tiny_model(model, {"--attention", "strided", "--stride", "4"});
  json config = json::parse(read_bytes(model + "/config.json"));
  CHECK(config.at("attention_type") == "strided");
  CHECK(config.at("sparse_stride") == 4);
  CHECK_FALSE(config.contains("sliding_window"));
  CHECK(json::parse(run_ok({"eval", "--model", model, "--data", "builtin:toy", "--json"}).out)
            .at("loss")
            .get<double>() > 0);
  run_ok({"heads", "--model", model});
  CHECK_THAT(run_ok({"sample", "--model", model, "--tokens", "5", "--verbose"}).err,
             Catch::Matchers::Contains("strided 4 attention"));
  run_ok({"train", "--resume", model, "--steps", "30"});
  CHECK(json::parse(read_bytes(committed_path(model, "config.json"))).at("sparse_stride") == 4);
  check_one_line_error(run_cli({"train", "--resume", model, "--steps", "40", "--stride", "5"}),
                       {"--stride 5", "4"});

  check_one_line_error(run_cli(tiny_train_args(dir.file("a"), {"--attention", "strided"})),
                       {"--attention strided", "--stride"});
  check_one_line_error(run_cli(tiny_train_args(dir.file("b"), {"--stride", "3"})),
                       {"--stride", "--attention strided"});
  check_one_line_error(
      run_cli(tiny_train_args(dir.file("c"), {"--attention", "window", "--window", "3", "--stride", "3"})),
      {"--stride", "--attention strided"});

  std::filesystem::remove(model + "/checkpoint.json");
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"sparse_stride", 0}, {"sparse_stride", nullptr}, {"sliding_window", 4},
           {"attention_type", "sparse"}}) {
    json bad = config;
    bad[key] = value;
    write_bytes(model + "/config.json", bad.dump(2));
    INFO(bad.dump());
    check_one_line_error(run_cli({"sample", "--model", model, "--tokens", "4"}), {"config.json", key});
  }
}

TEST_CASE("train --attention linear: config.json, sample, heads, resume, and RoPE and ALiBi refused",
          "[cli][linear]") {
  ScratchDir dir;
  const std::string model = dir.file("linear");
  train_tiny_model(model, {"--attention", "linear", "--pos", "sinusoidal"});
  const json config = json::parse(read_bytes(model + "/config.json"));
  CHECK(config.at("attention_type") == "linear");
  CHECK_FALSE(config.contains("sliding_window"));
  // 1 layer x 2 kv heads x (8^2 + 8) x 4 bytes
  CHECK_THAT(run_ok({"sample", "--model", model, "--tokens", "5", "--verbose"}).err,
             Catch::Matchers::Contains("linear attention") &&
                 Catch::Matchers::Contains("recurrent state: 576 bytes"));
  run_ok({"heads", "--model", model});
  run_ok({"train", "--resume", model, "--steps", "30"});
  CHECK(saved_step(model) == 30);
  for (const std::string pos : {"rope", "alibi"}) {
    const CliResult refused =
        run_cli(tiny_train_args(dir.file("bad_" + pos), {"--attention", "linear", "--pos", pos}));
    check_one_line_error(refused, {"linear attention", pos});
    CHECK(refused.exited_with(2));
  }
}

TEST_CASE("train --attention bigbird: config.json keys and blocks, resumed byte-identical, eval, "
          "heads and sample run, refusals", "[cli][bigbird]") {
  ScratchDir dir;
  const std::vector<std::string> bigbird = {"--attention", "bigbird", "--window", "4",
                                            "--global-tokens", "1", "--random-blocks", "1",
                                            "--block-size", "4", "--eval-every", "5"};
  const std::string model = dir.file("bigbird"), resumed = dir.file("resumed");
  train_tiny_model(model, concat(bigbird, {"--steps", "10"}));
  train_tiny_model(resumed, concat(bigbird, {"--steps", "5"}));
  run_ok({"train", "--resume", resumed, "--steps", "10", "--threads", "1"});
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json"}) {
    INFO(file);
    CHECK(read_bytes(committed_path(resumed, file)) == read_bytes(committed_path(model, file)));
  }
  json config = json::parse(read_bytes(committed_path(model, "config.json")));
  CHECK(config.at("attention_type") == "bigbird");
  CHECK(config.at("sliding_window") == 4);
  CHECK(config.at("global_tokens") == 1);
  CHECK(config.at("bigbird_block_size") == 4);
  CHECK(config.at("bigbird_random_blocks") == 1);
  CHECK(config.at("bigbird_seed") == 1337);  // the run's --seed
  // One random key block per query block of the context of 16, at or before it.
  const json& blocks = config.at("bigbird_random_key_blocks");
  REQUIRE(blocks.size() == 4);
  CHECK(blocks[0] == json::array({0}));
  for (size_t qb = 0; qb < 4; ++qb) CHECK(blocks[qb].size() == 1);
  CHECK(json::parse(run_ok({"eval", "--model", model, "--data", "builtin:toy", "--json"}).out)
            .at("loss")
            .get<double>() > 0);
  CHECK(json::parse(run_ok({"heads", "--model", model, "--json"}).out).at("heads").size() == 2);
  run_ok({"heads", "--model", model});
  CHECK(std::filesystem::exists(model + "/heads/layer0.png"));
  CHECK_THAT(run_ok({"sample", "--model", model, "--tokens", "20", "--verbose"}).err,
             Catch::Matchers::Contains("bigbird: window 4 + 1 global tokens + 1 random blocks of 4"));
  check_one_line_error(run_cli({"train", "--resume", model, "--steps", "20", "--random-blocks", "2"}),
                       {"--random-blocks 2", "1"});

  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> refusals = {
      {{"--attention", "bigbird", "--window", "4", "--block-size", "5"}, {"--block-size 5", "--block 16"}},
      {{"--attention", "bigbird", "--window", "4", "--block-size", "4", "--random-blocks", "5"},
       {"--random-blocks 5", "4 blocks"}},
      {{"--attention", "bigbird", "--window", "4"}, {"--attention bigbird", "--block-size"}},
      {{"--attention", "bigbird", "--block-size", "4"}, {"--attention bigbird", "--window"}},
      {{"--block-size", "4"}, {"--block-size", "--attention bigbird"}},
      {{"--attention", "window", "--window", "4", "--random-blocks", "1"},
       {"--random-blocks", "--attention bigbird"}}};
  for (size_t i = 0; i < refusals.size(); ++i) {
    INFO(i);
    const CliResult r = run_cli(tiny_train_args(dir.file("bad" + std::to_string(i)), refusals[i].first));
    CHECK(r.exited_with(2));
    check_one_line_error(r, refusals[i].second);
  }

  std::filesystem::remove(model + "/checkpoint.json");
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"bigbird_random_key_blocks", json::array({{0}, {0}, {0}, {0}})},
           {"bigbird_block_size", 5}, {"bigbird_seed", -1}, {"sparse_stride", 4}}) {
    json bad = config;
    bad[key] = value;
    if (bad == config) continue;  // the drawn blocks happened to be these
    write_bytes(model + "/config.json", bad.dump(2));
    INFO(bad.dump());
    check_one_line_error(run_cli({"sample", "--model", model, "--tokens", "4"}), {"config.json"});
  }
}
