// tinygpt sample: generate text from a trained model with a key/value cache.
#include <limits>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "process.hpp"
#include "tinygpt/analysis/task_commands.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/train/checkpoint.hpp"

namespace tinygpt::cli {
namespace {

struct SampleFlags {
  std::string model;
  std::string precision = "f32";
  std::string prompt;
  std::string source;  // an encoder-decoder's input
  bool temperature_given = false;
  int threads = 0;
  bool verbose = false;
  bool json = false;
  nn::SampleOptions options;
};

void run_sample(const SampleFlags& f) {
  set_num_threads(f.threads);
  const std::unique_ptr<train::Task> task = train::load_task(f.model);
  analysis::SampleRequest request;
  request.prompt = f.prompt;
  request.source = f.source;
  request.options = f.options;
  request.options.precision = parse_precision(f.precision);
  request.temperature_given = f.temperature_given;
  request.json = f.json;
  request.on_text = [](const std::string& text) {
    fmt::print("{}", text);  // every byte: a NUL in the text too
    flush_stdout();
  };
  const analysis::SampleOutput out =
      in_flag_terms_of([&] { return analysis::commands_for(*task, f.model)->sample(request); });
  fmt::print("{}\n", f.json ? json_text(out.json) : "");
  if (f.verbose) fmt::print(stderr, "{}", out.speed);
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto flags = std::make_shared<SampleFlags>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a trained model");
  set_memory_advice(*cmd, "lower --tokens, or sample from a smaller model than --model's");
  cmd->add_option("--model", flags->model, "checkpoint directory written by tinygpt train")->type_name("DIR")->required();
  cmd->add_option("--prompt", flags->prompt, "text to continue (default: start of a document)");
  cmd->add_option("--source", flags->source,
                  "an encoder-decoder's input: print its output, decoded greedily unless "
                  "--temperature is given (stops at the end token)");
  cmd->add_option("--tokens", flags->options.tokens, "tokens to generate (characters, or subwords on a BPE run)")->check(integer_in(0, int64_t{1} << 30))->capture_default_str();
  cmd->add_option("--temperature", flags->options.temperature, "softmax temperature (0: greedy; an encoder-decoder's default is 0)")->check(number_in(0.0, 100.0))->capture_default_str();
  cmd->add_option("--top-k", flags->options.top_k, "sample among the k likeliest tokens (0: all)")->check(integer_in(0, std::numeric_limits<int64_t>::max()))->capture_default_str();
  cmd->add_option("--seed", flags->options.seed, "sampling seed")->check(seed_value())->capture_default_str();
  cmd->add_option("--precision", flags->precision,
                  "a GPT's products: f32, or bf16 (its weight matrices rounded to bf16 once, half "
                  "the bytes each token reads; sums in f32; attention and its cache stay f32)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  add_threads_flag(*cmd, flags->threads);
  cmd->add_flag("--json", flags->json, "print one JSON object (prompt, generated text, settings, seconds) instead of the text");
  cmd->add_flag("--verbose", flags->verbose, "print the generation speed and the KV cache size on stderr");
  cmd->callback([flags, cmd] {
    flags->temperature_given = cmd->count("--temperature") > 0;
    run_sample(*flags);
  });
}

}  // namespace tinygpt::cli
