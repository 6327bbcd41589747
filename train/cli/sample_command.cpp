// tinygpt sample: generate text from a trained model with a key/value cache.
#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "process.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/nn/sampler.hpp"

namespace tinygpt::cli {
namespace {

struct SampleFlags {
  std::string model;
  std::string prompt;
  std::string source;  // an encoder-decoder's input
  bool temperature_given = false;
  int threads = 1;
  bool verbose = false;
  bool json = false;
  nn::SampleOptions options;
};

// An encoder-decoder's output for --source: greedy unless --temperature is given.
void sample_target(const SampleFlags& f, train::LoadedModel& loaded) {
  if (!f.prompt.empty()) {
    throw UsageError(fmt::format("--prompt: {} is an encoder-decoder; give its input with --source", f.model));
  }
  if (f.source.empty()) throw UsageError(fmt::format("{} is an encoder-decoder: pass --source TEXT", f.model));
  const std::vector<int64_t> source = encode_flag("--source", f.source, *loaded.tokenizer);
  const int64_t positions = loaded.seq2seq_config.max_position_embeddings;
  if (static_cast<int64_t>(source.size()) > positions) {
    throw ValueError(fmt::format("--source has {} characters; {} takes at most {}", source.size(), f.model, positions));
  }
  nn::SampleOptions options = f.options;
  if (!f.temperature_given) options.temperature = 0.0;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int64_t> ids = with_context("--model " + f.model, [&] { return nn::generate(*loaded.seq2seq, source, options); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string text = loaded.tokenizer->decode(ids);
  if (f.json) {
    fmt::print("{}\n", json_text(nlohmann::json{{"source", f.source},
                                                {"text", text},
                                                {"tokens", ids.size()},
                                                {"temperature", options.temperature},
                                                {"top_k", options.top_k},
                                                {"seed", options.seed},
                                                {"seconds", seconds},
                                                {"model", f.model}}));
  } else {
    fmt::print("{}\n", text);
  }
  if (f.verbose) {
    fmt::print(stderr, "{} tokens in {:.3f} s; the encoder's keys and values projected once, the "
               "decoder's self-attention cached\n", ids.size(), seconds);
  }
}

// The id whose token is exactly `bytes`, if the vocabulary has one.
std::optional<int64_t> id_of_token(const data::Tokenizer& tokenizer, const std::string& bytes) {
  for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.token(id) == bytes) return id;
  }
  return std::nullopt;
}

void run_sample(const SampleFlags& f) {
  set_num_threads(f.threads);
  train::LoadedModel loaded = train::load_any_model(f.model);
  if (loaded.is_encoder_decoder()) return sample_target(f, loaded);
  if (!f.source.empty()) {
    throw UsageError(fmt::format("--source: {} is a GPT; give its text to continue with --prompt", f.model));
  }
  // With no prompt, start where documents start: after a newline (if the vocabulary has one),
  // and print from the first token that is not one (text between blank lines starts so).
  std::vector<int64_t> prompt;
  nn::SampleOptions options = f.options;
  if (!f.prompt.empty()) {
    prompt = encode_flag("--prompt", f.prompt, *loaded.tokenizer);
  } else {
    const std::optional<int64_t> newline = id_of_token(*loaded.tokenizer, "\n");
    prompt = {newline.value_or(0)};
    if (newline) options.skip_leading = *newline;
  }
  // As text, each character as it comes (the prompt with the first, which proves the model's
  // logits finite: a failure prints nothing); as JSON, one object at the end.
  std::string generated;
  bool prompt_shown = f.json;
  const auto show_prompt = [&] {
    if (!prompt_shown) fmt::print("{}", f.prompt);
    prompt_shown = true;
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    nn::generate(*loaded.model, prompt, options, [&](int64_t id) {
      const std::string& token = loaded.tokenizer->token(id);
      if (f.json) {
        generated += token;
        return;
      }
      show_prompt();
      fmt::print("{}", token);  // every byte: a NUL in the text too
      flush_stdout();
    });
  } catch (const ValueError& e) {
    throw ValueError(f.model + ": ", e);
  }
  show_prompt();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (f.json) {
    fmt::print("{}\n", json_text(nlohmann::json{{"prompt", f.prompt},
                                                {"text", generated},
                                                {"tokens", f.options.tokens},
                                                {"temperature", f.options.temperature},
                                                {"top_k", f.options.top_k},
                                                {"seed", f.options.seed},
                                                {"seconds", seconds},
                                                {"model", f.model}}));
  } else {
    fmt::print("\n");
  }
  if (f.verbose) {
    const nn::GPTConfig& c = loaded.config;
    const int64_t d = c.n_embd / c.n_head;
    // The cache holds at most the context, or a sliding window's ring of W + G positions.
    const int64_t positions = loaded.model->kv_cache_positions(
        static_cast<int64_t>(prompt.size()) + f.options.tokens);
    fmt::print(stderr,
               "{} characters in {:.3f} s ({:.1f} characters/s); positions {}, {} heads, {} "
               "key/value heads, {} attention\n",
               f.options.tokens, seconds, seconds > 0 ? f.options.tokens / seconds : 0.0,
               nn::position_embedding_name(c.position_embedding), c.n_head, c.kv_heads(),
               c.attention.str());
    if (c.attention.is_performer()) {
      fmt::print(stderr,
                 "recurrent state: {} bytes, whatever the length (Performer's running sums: {} "
                 "layers x {} kv_heads x (features x d_head + features) x 4 bytes, features {}, "
                 "d_head {})\n",
                 loaded.model->recurrent_state_bytes(), c.n_layer, c.kv_heads(),
                 c.attention.features, d);
    } else if (c.attention.is_linear()) {
      fmt::print(stderr,
                 "recurrent state: {} bytes, whatever the length (linear attention's running "
                 "sums: {} layers x {} kv_heads x (d_head^2 + d_head) x 4 bytes, d_head {})\n",
                 loaded.model->recurrent_state_bytes(), c.n_layer, c.kv_heads(), d);
    } else {
      fmt::print(stderr,
                 "KV cache: {} bytes at {} positions (2 x {} layers x {} kv_heads x {} x d_head {} "
                 "x 4 bytes)\n",
                 loaded.model->kv_cache_bytes(positions), positions, c.n_layer, c.kv_heads(),
                 positions, d);
    }
  }
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
  cmd->add_option("--tokens", flags->options.tokens, "characters to generate")->check(integer_in(0, int64_t{1} << 30))->capture_default_str();
  cmd->add_option("--temperature", flags->options.temperature, "softmax temperature (0: greedy; an encoder-decoder's default is 0)")->check(number_in(0.0, 100.0))->capture_default_str();
  cmd->add_option("--top-k", flags->options.top_k, "sample among the k likeliest characters (0: all)")->check(integer_in(0, std::numeric_limits<int64_t>::max()))->capture_default_str();
  cmd->add_option("--seed", flags->options.seed, "sampling seed")->check(seed_value())->capture_default_str();
  add_threads_flag(*cmd, flags->threads, "1 by default: decoding one position is too small to share");
  cmd->add_flag("--json", flags->json, "print one JSON object (prompt, generated text, settings, seconds) instead of the text");
  cmd->add_flag("--verbose", flags->verbose, "print the generation speed and the KV cache size on stderr");
  cmd->callback([flags, cmd] {
    flags->temperature_given = cmd->count("--temperature") > 0;
    run_sample(*flags);
  });
}

}  // namespace tinygpt::cli
