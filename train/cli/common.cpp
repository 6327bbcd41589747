#include "commands.hpp"
#include "tinygpt/data/text_file.hpp"
#include "tinygpt/data/toy_corpus.hpp"

namespace tinygpt::cli {

// Large enough that a default run never sees the same window twice in a meaningful way, small
// enough to generate in well under a second.
constexpr uint64_t kToySeed = 0;
constexpr int64_t kToyChars = 1'000'000;

void ModelFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--layers", layers, "transformer blocks")->check(CLI::Range(1, 64))->capture_default_str();
  cmd.add_option("--heads", heads, "attention heads per block")->check(CLI::Range(1, 64))->capture_default_str();
  cmd.add_option("--d-model", d_model, "embedding width (a multiple of --heads)")
      ->check(CLI::Range(1, 8192))->capture_default_str();
  cmd.add_option("--block", block, "context length in characters")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd.add_option("--dropout", dropout, "dropout probability, in [0, 1)")->capture_default_str();
}

nn::GPTConfig ModelFlags::config(int64_t vocab_size) const {
  nn::GPTConfig c;
  c.vocab_size = vocab_size;
  c.block_size = block;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_embd = d_model;
  c.dropout = dropout;
  if (d_model % heads != 0) {
    throw ValueError(fmt::format("--d-model {} is not divisible by --heads {}", d_model, heads));
  }
  if (!(dropout >= 0.0 && dropout < 1.0)) {
    throw ValueError(fmt::format("--dropout must be in [0, 1), got {}", dropout));
  }
  c.validate();
  return c;
}

std::string load_text(const std::string& source) {
  if (source == kToyCorpus) return data::generate_toy_corpus(kToySeed, kToyChars);
  return data::read_text_file(source);
}

}  // namespace tinygpt::cli
