// tinygpt sample and eval on a trained checkpoint: sampling is a function of the seed, eval's
// JSON is one object whose numbers do not depend on the run or the thread count, and its token
// count is that of the split's whole context windows.
#include <cmath>
#include <cstring>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

// A text of exactly `chars` characters, all in the toy corpus's vocabulary.
std::string toy_text(size_t chars) {
  const std::string sentence = "the big cat sees [an owl] (a fox).\n";
  std::string text;
  while (text.size() < chars) text += sentence;
  return text.substr(0, chars);
}

}  // namespace

TEST_CASE("sample is a function of --seed", "[cli][sample]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  auto sample = [&](const std::string& seed) {
    return run_ok({"sample", "--model", model, "--seed", seed, "--tokens", "60", "--prompt", "the "})
        .out;
  };
  const std::string first = sample("5");
  CHECK(first.rfind("the ", 0) == 0);
  CHECK(first.size() == 4 + 60 + 1);  // the prompt, one byte per toy character, a newline
  CHECK(sample("5") == first);
  CHECK(sample("6") != first);
}

TEST_CASE("sample --tokens 0 prints the prompt alone", "[cli][sample]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  CHECK(run_ok({"sample", "--model", model, "--tokens", "0"}).out == "\n");
  CHECK(run_ok({"sample", "--model", model, "--tokens", "0", "--prompt", "a cat"}).out == "a cat\n");
}

TEST_CASE("sample runs past the context of a model with a context of 1", "[cli][sample]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model, {"--block", "1"});  // replaces the tiny model's --block 16
  CHECK(run_ok({"sample", "--model", model, "--tokens", "20"}).out.size() == 21);
}

TEST_CASE("eval --json is one object, the same across runs and thread counts", "[cli]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model, {"--dropout", "0.1"});  // eval must switch dropout off
  // 20000 characters: a val split of 2000, 124 windows, 4 batches of up to 32.
  write_bytes(dir.file("text.txt"), toy_text(20000));
  auto eval = [&](const std::string& threads) {
    return run_ok({"eval", "--model", model, "--data", dir.file("text.txt"), "--json", "--threads",
                   threads})
        .out;
  };
  const std::string out = eval("1");
  REQUIRE(out.back() == '\n');
  CHECK(out.find('\n') == out.size() - 1);  // one line
  const json result = json::parse(out);
  REQUIRE(result.is_object());
  CHECK(result.size() == 4);  // loss, perplexity, tokens, bits_per_byte
  const double loss = result.at("loss").get<double>();
  CHECK(loss > 0);
  CHECK(loss < std::log(34.0) + 0.5);  // about uniform over the 34 toy characters, or better
  CHECK(result.at("tokens").get<int64_t>() == 124 * 16);
  CHECK(result.at("perplexity").get<double>() == Approx(std::exp(loss)).epsilon(1e-12));
  CHECK(eval("1") == out);
  CHECK(eval("2") == out);
}

TEST_CASE("eval counts the predicted tokens of every whole window of the split", "[cli]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);  // context T = 16
  const int64_t n = 1000, T = 16;
  write_bytes(dir.file("text.txt"), toy_text(static_cast<size_t>(n)));
  const double val_fraction = GENERATE(0.1, 0.25);
  // The dataset's split: the first floor(n (1 - f)) tokens train, the rest val.
  const auto train_size = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - val_fraction)));
  const std::vector<std::pair<std::string, int64_t>> splits = {
      {"train", train_size}, {"val", n - train_size}, {"all", n}};
  for (const auto& [split, size] : splits) {
    CAPTURE(val_fraction, split, size);
    const json result = json::parse(
        run_ok({"eval", "--model", model, "--data", dir.file("text.txt"), "--split", split,
                "--val-fraction", std::to_string(val_fraction), "--json", "--threads", "1"})
            .out);
    CHECK(result.at("tokens").get<int64_t>() == (size - 1) / T * T);
  }
}

TEST_CASE("eval without --data reads the run's own text, split as in training", "[cli]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  write_bytes(dir.file("text.txt"), toy_text(6000));
  train_tiny_model(model, {"--data", dir.file("text.txt"), "--val-fraction", "0.25"});
  const auto eval = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"eval", "--model", model, "--json", "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return json::parse(run_ok(args).out);
  };
  const json own = eval({});
  CHECK(own == eval({"--data", dir.file("text.txt"), "--val-fraction", "0.25"}));
  CHECK(own != eval({"--data", dir.file("text.txt")}));  // the default 0.1 is another split
  CHECK(eval({"--val-fraction", "0.1"}) == eval({"--data", dir.file("text.txt")}));
}

TEST_CASE("sample --json is one object holding the text sample prints", "[cli][sample]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  const std::vector<std::string> args{"sample", "--model", model, "--seed", "7", "--tokens", "30",
                                      "--prompt", "the ", "--top-k", "5"};
  const std::string text = run_ok(args).out;
  const json j = json::parse(run_ok(concat(args, {"--json"})).out);
  CHECK(j["text"] == text.substr(4, 30));  // without the prompt and the final newline
  CHECK(j["prompt"] == "the ");
  CHECK(j["model"] == model);
  CHECK(j["tokens"] == 30);
  CHECK(j["top_k"] == 5);
  CHECK(j["seed"] == 7);
  CHECK(j["temperature"] == 1.0);
  CHECK(j["seconds"].get<double>() >= 0.0);
  CHECK(j["precision"] == "f32");
  const json bf16 = json::parse(run_ok(concat(args, {"--json", "--precision", "bf16"})).out);
  CHECK(bf16["precision"] == "bf16");
  CHECK(bf16["text"].get<std::string>().size() == 30);
}

TEST_CASE("sample without a prompt starts at a character, not at the blank lines between documents",
          "[cli][sample]") {
  ScratchDir dir;
  // After a newline this text mostly has another: a model of it draws newlines first.
  std::string text;
  for (int i = 0; i < 400; ++i) text += i % 2 ? "ab.\n\n\n\n\n\n" : "cd.\n\n\n\n\n\n";
  write_bytes(dir.file("blank.txt"), text);
  const std::string model = dir.file("model");
  train_tiny_model(model, {"--data", dir.file("blank.txt"), "--steps", "60", "--lr", "0.02"});
  int newline_after_newline = 0;
  for (int seed = 1; seed <= 8; ++seed) {
    const std::string seed_flag = std::to_string(seed);
    const std::string out =
        run_ok({"sample", "--model", model, "--seed", seed_flag, "--tokens", "12"}).out;
    INFO(out);
    REQUIRE(out.size() == 12 + 1);
    CHECK(out.front() != '\n');
    const json j = json::parse(run_ok({"sample", "--model", model, "--seed", seed_flag, "--tokens", "12", "--json"}).out);
    CHECK(j["text"] == out.substr(0, 12));
    newline_after_newline += out.find("\n\n") != std::string::npos;
  }
  CHECK(newline_after_newline > 0);  // the model did learn the blank lines
}

TEST_CASE("sample refuses a model whose logits are not finite, printing no text", "[cli][sample][hardening]") {
  ScratchDir dir;
  const std::string model = dir.file("model"), huge = dir.file("huge");
  train_tiny_model(model);
  std::filesystem::create_directories(huge);
  for (const char* name : {"config.json", "tokenizer.json"}) {
    std::filesystem::copy_file(model + "/" + name, huge + "/" + name);
  }
  // Finite weights whose product overflows float32: the final layer norm's gain at 3e38.
  std::string weights = read_bytes(model + "/model.safetensors");
  uint64_t header_size = 0;
  std::memcpy(&header_size, weights.data(), 8);
  const json header = json::parse(weights.substr(8, header_size));
  const json& offsets = header.at("transformer.ln_f.weight").at("data_offsets");
  for (uint64_t at = 8 + header_size + offsets[0].get<uint64_t>(); at < 8 + header_size + offsets[1].get<uint64_t>(); at += 4) {
    const float big = 3e38f;
    std::memcpy(&weights[at], &big, 4);
  }
  write_bytes(huge + "/model.safetensors", weights);
  for (const std::vector<std::string>& more : {std::vector<std::string>{}, {"--prompt", "the "}, {"--json"}}) {
    CAPTURE(more);
    const CliResult r = run_cli(concat({"sample", "--model", huge, "--tokens", "5"}, more));
    check_one_line_error(r, {huge + ": the logits for output token 0 are not finite"});
    CHECK(r.exited_with(1));
  }
}

TEST_CASE("eval needs a window in the split it reads only, and says which split is too short",
          "[cli][eval]") {
  ScratchDir dir;
  const std::string text = dir.file("t.txt"), model = dir.file("model");
  write_bytes(text, toy_text(6000));  // splits of 5400 and 600 characters
  train_tiny_model(model, {"--data", text, "--pos", "none"});  // runs on any window
  // The train split holds a window of 2000; the val split, which is not read, does not.
  const json train = json::parse(run_ok({"eval", "--model", model, "--split", "train", "--block", "2000", "--json"}).out);
  CHECK(train["tokens"] == 2 * 2000);
  const json all = json::parse(run_ok({"eval", "--model", model, "--split", "all", "--block", "3000", "--json"}).out);
  CHECK(all["tokens"] == 3000);
  // The val split is too short: said in the flags' terms, naming the split.
  check_one_line_error(run_cli({"eval", "--model", model, "--split", "val", "--block", "1000"}),
                       {"the val split has 600 tokens but --block 1000 needs at least 1001"});
}
