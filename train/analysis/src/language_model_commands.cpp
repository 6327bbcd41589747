// sample, eval and heads on a language model (a GPT: generation and the head tools need its
// hooks and cache), and the end of its training run.
#include "language_model_commands.hpp"

#include <chrono>
#include <cmath>

#include "command_errors.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/train/memory_estimate.hpp"

namespace tinygpt::analysis {

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
  const data::CharTokenizer& tokenizer = task_.tokenizer();
  // With no prompt, start where documents start: after a newline (if the vocabulary has one),
  // and emit from the first character that is not one (text between blank lines starts so).
  std::vector<int64_t> prompt;
  nn::SampleOptions options = r.options;
  if (!r.prompt.empty()) {
    prompt = encode_setting("prompt", r.prompt, tokenizer);
  } else {
    const auto& vocab = tokenizer.vocab();
    const auto newline = std::find(vocab.begin(), vocab.end(), U'\n');
    prompt = {newline != vocab.end() ? newline - vocab.begin() : 0};
    if (newline != vocab.end()) options.skip_leading = prompt.front();
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
              {"seconds", seconds},           {"model", model_dir_}};
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
  double total = 0.0;
  for (int64_t first = 0; first < windows; first += r.batch) {
    const int64_t count = std::min(r.batch, windows - first);
    if (count != r.batch) empty_cache();  // the cache of full batches' sizes, before a shorter one
    const data::Batch batch = dataset.window_batch(r.split, first, count);
    total += model.loss(batch.inputs, batch.targets).item() * static_cast<double>(count);
  }
  const double loss = total / static_cast<double>(windows);
  if (!std::isfinite(loss)) {
    throw ValueError(fmt::format("{}: the loss over the {} split of {} is not finite ({})",
                                 model_dir_, r.split_name, r.data_source, loss));
  }
  const int64_t tokens = windows * block;
  return {{{"loss", loss}, {"perplexity", std::exp(loss)}, {"tokens", tokens}},
          fmt::format("{} split of {}: loss {:.4f}, perplexity {:.3f} over {} predicted characters "
                      "(windows of {})\n",
                      r.split_name, r.data_source, loss, std::exp(loss), tokens, block)};
}

void LanguageModelCommands::report_run(train::Run& run, const heads::ProbeSet* probes, std::FILE* out) {
  analysis::report_run(run, probes, out);
}

}  // namespace tinygpt::analysis
