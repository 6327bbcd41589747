// tinygpt train --tokenizer: a run on byte-level BPE (trained on the run's training split, or
// read from a file) stores its tokenizer, samples, evaluates in bits per byte and resumes only
// with the same tokenizer; eval's bits per byte of a character run.
#include <cmath>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

// The first `bytes` bytes of tiny Shakespeare: words enough for a few hundred merges.
std::string shakespeare(size_t bytes) {
  return read_bytes(std::string(TINYGPT_SOURCE_DIR) + "/data/texts/tinyshakespeare.txt").substr(0, bytes);
}

}  // namespace

TEST_CASE("train --tokenizer bpe:N trains, stores, samples, evaluates and resumes a subword run", "[cli][slow]") {
  ScratchDir dir;
  write_bytes(dir.file("text.txt"), shakespeare(20000));
  const std::string run = dir.file("run");
  const std::vector<std::string> args =
      tiny_train_args(run, {"--data", dir.file("text.txt"), "--tokenizer", "bpe:300", "--steps", "10"});
  run_ok(args);
  const json tokenizer = json::parse(read_bytes(committed_path(run, "tokenizer.json")));
  CHECK(tokenizer.at("pre_tokenizer").at("type") == "ByteLevel");
  CHECK(tokenizer.at("model").at("vocab").size() == 300);
  CHECK(json::parse(read_bytes(committed_path(run, "config.json"))).at("vocab_size") == 300);

  const json eval = json::parse(run_ok({"eval", "--model", run, "--json", "--threads", "1"}).out);
  // A token stands for several bytes here, so a byte costs less than a token.
  CHECK(eval.at("bits_per_byte").get<double>() > 0.0);
  CHECK(eval.at("bits_per_byte").get<double>() < eval.at("loss").get<double>() / std::log(2.0));
  CHECK(run_ok({"sample", "--model", run, "--prompt", "First Citizen", "--tokens", "5"}).out.rfind("First Citizen", 0) == 0);

  run_ok(with_changes(args, {"--resume", run, "--steps", "12"}));
  CHECK(saved_step(run) == 12);
  const CliResult other = run_cli(with_changes(args, {"--resume", run, "--steps", "14", "--tokenizer", "bpe:280"}));
  CHECK(other.exit_code == 2);
  check_one_line_error(other, {"--tokenizer", "280 tokens", "300 tokens"});
  const CliResult chars = run_cli(tiny_train_args(dir.file("tuned"), {"--init-from", run, "--data", dir.file("text.txt"),
                                                                      "--tokenizer", committed_path(run, "tokenizer.json")}));
  CHECK(chars.exit_code == 0);
}

TEST_CASE("train --tokenizer FILE stores that tokenizer.json unchanged", "[cli][slow]") {
  ScratchDir dir;
  write_bytes(dir.file("text.txt"), shakespeare(20000));
  run_ok({"tokenizer", "train", "--data", dir.file("text.txt"), "--vocab-size", "270", "--out", dir.file("tok.json")});
  const std::string run = dir.file("run");
  run_ok(tiny_train_args(run, {"--data", dir.file("text.txt"), "--tokenizer", dir.file("tok.json"), "--steps", "4"}));
  CHECK(read_bytes(committed_path(run, "tokenizer.json")) == read_bytes(dir.file("tok.json")));
  // A character run's tokenizer is not this one: fine-tuning the BPE run with it is refused.
  const CliResult refused = run_cli(tiny_train_args(dir.file("tuned"), {"--init-from", run, "--data", dir.file("text.txt"),
                                                                        "--tokenizer", "bpe:256"}));
  CHECK(refused.exit_code == 2);
  check_one_line_error(refused, {"--tokenizer", "256 tokens", "270 tokens"});
}

TEST_CASE("train --tokenizer refuses a bad vocabulary size and an encoder-decoder", "[cli]") {
  for (const char* value : {"bpe:", "bpe:12", "bpe:x", "bpe:99999999999"}) {
    const CliResult r = run_cli({"train", "--tokenizer", value, "--out", "never"});
    CHECK(r.exit_code == 2);
    check_one_line_error(r, {"--tokenizer", value});
  }
  const CliResult r = run_cli({"train", "--arch", "encoder-decoder", "--tokenizer", "bpe:300", "--out", "never"});
  CHECK(r.exit_code == 2);
  check_one_line_error(r, {"--tokenizer"});
}

TEST_CASE("eval's bits per byte of a character run on ASCII text is its loss in bits", "[cli]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  const json eval = json::parse(run_ok({"eval", "--model", model, "--json", "--threads", "1"}).out);
  CHECK(eval.at("bits_per_byte").get<double>() == Approx(eval.at("loss").get<double>() / std::log(2.0)));
  const std::string line = run_ok({"eval", "--model", model, "--threads", "1"}).out;
  CHECK(line.find("bits per byte") != std::string::npos);
}
