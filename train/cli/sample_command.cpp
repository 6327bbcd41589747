// tinygpt sample: generate text from a trained model with a key/value cache.
#include <algorithm>
#include <limits>

#include "commands.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/nn/sampler.hpp"

namespace tinygpt::cli {
namespace {

struct SampleFlags {
  std::string model;
  std::string prompt;
  int threads = 1;
  nn::SampleOptions options;
};

void run_sample(const SampleFlags& f) {
  set_num_threads(f.threads);
  train::LoadedModel loaded = train::load_model(f.model);
  // With no prompt, start where documents start: after a newline (if the vocabulary has one).
  std::vector<int64_t> prompt;
  if (!f.prompt.empty()) {
    prompt = encode_flag("--prompt", f.prompt, loaded.tokenizer);
  } else {
    const auto& vocab = loaded.tokenizer.vocab();
    const auto newline = std::find(vocab.begin(), vocab.end(), U'\n');
    prompt = {newline != vocab.end() ? newline - vocab.begin() : 0};
  }
  std::fputs(f.prompt.c_str(), stdout);
  nn::generate(*loaded.model, prompt, f.options, [&](int64_t id) {
    std::fputs(loaded.tokenizer.token(id).c_str(), stdout);
    std::fflush(stdout);
  });
  std::fputs("\n", stdout);
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto flags = std::make_shared<SampleFlags>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a trained model");
  cmd->add_option("--model", flags->model, "checkpoint directory written by tinygpt train")->required();
  cmd->add_option("--prompt", flags->prompt, "text to continue (default: start of a document)");
  cmd->add_option("--tokens", flags->options.tokens, "characters to generate")->check(integer_in(0, int64_t{1} << 30))->capture_default_str();
  cmd->add_option("--temperature", flags->options.temperature, "softmax temperature (0: greedy)")->check(number_in(0.0, 100.0))->capture_default_str();
  cmd->add_option("--top-k", flags->options.top_k, "sample among the k likeliest characters (0: all)")->check(integer_in(0, std::numeric_limits<int64_t>::max()))->capture_default_str();
  cmd->add_option("--seed", flags->options.seed, "sampling seed")->check(seed_value())->capture_default_str();
  cmd->add_option("--threads", flags->threads, "threads (decoding one position is too small to share)")->check(integer_in(0, 256))->capture_default_str();
  cmd->callback([flags] { run_sample(*flags); });
}

}  // namespace tinygpt::cli
