// sample, eval and heads on a language model (a GPT: generation and the head tools need its
// hooks and cache), and the end of its training run.
#include "language_model_commands.hpp"

#include <chrono>
#include <cmath>
#include <optional>

#include "command_errors.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/train/memory_estimate.hpp"

namespace tinygpt::analysis {
namespace {

// The id whose token is exactly `bytes`, if the vocabulary has one.
std::optional<int64_t> id_of_token(const data::Tokenizer& tokenizer, const std::string& bytes) {
  for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.token(id) == bytes) return id;
  }
  return std::nullopt;
}

// The length in bytes of each id's token.
std::vector<int64_t> bytes_of_tokens(const data::Tokenizer& tokenizer) {
  std::vector<int64_t> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) {
    bytes[static_cast<size_t>(id)] = static_cast<int64_t>(tokenizer.token(id).size());
  }
  return bytes;
}

// The bytes of the text a batch's targets stand for.
int64_t bytes_of_targets(const Tensor& targets, const std::vector<int64_t>& token_bytes) {
  const int64_t* ids = targets.data<int64_t>();
  int64_t bytes = 0;
  for (int64_t i = 0; i < targets.numel(); ++i) bytes += token_bytes[static_cast<size_t>(ids[i])];
  return bytes;
}

}  // namespace

LanguageModelCommands::LanguageModelCommands(train::LanguageModelTask& task, std::string model_dir)
    : task_(task), model_dir_(std::move(model_dir)) {}

std::string LanguageModelCommands::what() const {
  return task_.gpt() != nullptr ? "a GPT" : fmt::format("a language model ({})", task_.kind());
}

nn::GPT& LanguageModelCommands::gpt(const char* command) {
  if (nn::GPT* g = task_.gpt()) return *g;
  throw ValueError(fmt::format("{}: {} is a model of its own; {} needs a GPT's hooks and cache",
                               model_dir_, task_.kind(), command));
}

SampleOutput LanguageModelCommands::sample(const SampleRequest& r) {
  if (!r.source.empty()) {
    refuse("source", {fmt::format("{} is {}; give its text to continue with ", model_dir_, what()), setting("prompt")});
  }
  nn::GPT& model = gpt("sample");
  const data::Tokenizer& tokenizer = task_.tokenizer();
  // With no prompt, start where documents start: after a newline (if the vocabulary has one),
  // and emit from the first token that is not one (text between blank lines starts so).
  std::vector<int64_t> prompt;
  nn::SampleOptions options = r.options;
  if (!r.prompt.empty()) {
    prompt = encode_setting("prompt", r.prompt, tokenizer);
  } else {
    const std::optional<int64_t> newline = id_of_token(tokenizer, "\n");
    prompt = {newline.value_or(0)};
    if (newline) options.skip_leading = *newline;
  }
  // As text, each character as it comes, the prompt with the first (which proves the model's
  // logits finite: a failure emits nothing).
  std::string generated;
  bool prompt_shown = r.json;
  const auto show_prompt = [&] {
    if (!prompt_shown) r.on_text(r.prompt);
    prompt_shown = true;
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    nn::generate(model, prompt, options, [&](int64_t id) {
      const std::string& token = tokenizer.token(id);
      generated += token;
      if (r.json) return;
      show_prompt();
      r.on_text(token);
    });
  } catch (const ValueError& e) {
    throw ValueError(model_dir_ + ": ", e);
  }
  show_prompt();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  SampleOutput out;
  out.json = {{"prompt", r.prompt},           {"text", generated},
              {"tokens", r.options.tokens},   {"temperature", r.options.temperature},
              {"top_k", r.options.top_k},     {"seed", r.options.seed},
              {"seconds", seconds},           {"model", model_dir_},
              {"precision", precision_name(r.options.precision)}};
  out.speed = speed_lines(static_cast<int64_t>(prompt.size()), r.options.tokens, seconds);
  return out;
}

// The generation speed, and the cache it kept: at most the context, or a sliding window's ring
// of W + G positions, or linear attention's running sums whatever the length.
std::string LanguageModelCommands::speed_lines(int64_t prompt, int64_t tokens, double seconds) {
  nn::GPT& model = gpt("sample");
  const nn::GPTConfig& c = model.config();
  const int64_t d = c.n_embd / c.n_head;
  const int64_t positions = model.kv_cache_positions(prompt + tokens);
  std::string out = fmt::format(
      "{} characters in {:.3f} s ({:.1f} characters/s); positions {}, {} heads, {} key/value "
      "heads, {} attention\n",
      tokens, seconds, seconds > 0 ? tokens / seconds : 0.0,
      nn::position_embedding_name(c.position_embedding), c.n_head, c.kv_heads(), c.attention.str());
  if (c.attention.is_performer()) {
    return out + fmt::format("recurrent state: {} bytes, whatever the length (Performer's running "
                             "sums: {} layers x {} kv_heads x (features x d_head + features) x 4 "
                             "bytes, features {}, d_head {})\n",
                             model.recurrent_state_bytes(), c.n_layer, c.kv_heads(),
                             c.attention.features, d);
  }
  if (c.attention.is_linear()) {
    return out + fmt::format("recurrent state: {} bytes, whatever the length (linear attention's "
                             "running sums: {} layers x {} kv_heads x (d_head^2 + d_head) x 4 "
                             "bytes, d_head {})\n",
                             model.recurrent_state_bytes(), c.n_layer, c.kv_heads(), d);
  }
  return out + fmt::format("KV cache: {} bytes at {} positions (2 x {} layers x {} kv_heads x {} x "
                           "d_head {} x 4 bytes)\n",
                           model.kv_cache_bytes(positions), positions, c.n_layer, c.kv_heads(),
                           positions, d);
}

MethodOutput LanguageModelCommands::evaluate(const EvalRequest& r) {
  if (r.pseudo) refuse("pseudo", {fmt::format("{} is {}; pseudo-perplexity is a masked LM's", model_dir_, what())});
  nn::GPT& model = gpt("eval");
  const nn::GPTConfig& c = model.config();
  const int64_t block = r.block > 0 ? r.block : c.block_size;
  if (block > c.block_size && nn::has_context_limit(c.position_embedding)) {
    throw ValueError(std::vector<MessagePart>{
        named("block", block),
        fmt::format(" exceeds the context {} of {}, whose learned position embeddings stop there; "
                    "only models trained with ", c.block_size, model_dir_),
        setting("pos"), " sinusoidal, rope, alibi or none run on longer windows"});
  }
  // Only the split asked for must hold a window.
  const data::TextDataset dataset = data::make_dataset(
      r.text, data::absolute_source(r.data_source), task_.tokenizer(), block, r.val_fraction, r.split);
  const int64_t windows = dataset.num_windows(r.split);
  if (windows == 0) {
    throw ValueError(fmt::format("{}: the {} split is shorter than one window of {} characters",
                                 r.data_source, r.split_name, block + 1));
  }
  check_memory(train::estimate_eval_memory(c, std::min(r.batch, windows), block));
  // Every window has the same length, so the mean of window-batch means weighted by their size
  // is the mean over every predicted token.
  NoGradGuard no_grad;
  model.eval();
  const std::vector<int64_t> token_bytes = bytes_of_tokens(task_.tokenizer());
  double total = 0.0;
  int64_t bytes = 0;
  for (int64_t first = 0; first < windows; first += r.batch) {
    const int64_t count = std::min(r.batch, windows - first);
    if (count != r.batch) empty_cache();  // the cache of full batches' sizes, before a shorter one
    const data::Batch batch = dataset.window_batch(r.split, first, count);
    total += model.loss(batch.inputs, batch.targets).item() * static_cast<double>(count);
    bytes += bytes_of_targets(batch.targets, token_bytes);
  }
  const double loss = total / static_cast<double>(windows);
  if (!std::isfinite(loss)) {
    throw ValueError(fmt::format("{}: the loss over the {} split of {} is not finite ({})",
                                 model_dir_, r.split_name, r.data_source, loss));
  }
  const int64_t tokens = windows * block;
  // The loss over every predicted token in bits, shared by the bytes those tokens stand for: a
  // measure that compares models whatever their tokens.
  const double bits_per_byte = loss * static_cast<double>(tokens) / (std::log(2.0) * static_cast<double>(bytes));
  return {{{"loss", loss}, {"perplexity", std::exp(loss)}, {"tokens", tokens}, {"bits_per_byte", bits_per_byte}},
          fmt::format("{} split of {}: loss {:.4f}, perplexity {:.3f} over {} predicted tokens "
                      "(windows of {}), {:.4f} bits per byte\n",
                      r.split_name, r.data_source, loss, std::exp(loss), tokens, block, bits_per_byte)};
}

void LanguageModelCommands::report_run(train::Run& run, const heads::ProbeSet* probes, std::FILE* out) {
  analysis::report_run(run, probes, out);
}

}  // namespace tinygpt::analysis
