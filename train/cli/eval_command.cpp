// tinygpt eval: deterministic loss and perplexity of a model over a whole split of a text.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/pairs.hpp"
#include "tinygpt/seq2seq/pair_eval.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/memory_estimate.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::cli {
namespace {

struct EvalFlags {
  std::string model;
  std::string data;  // "": the run's own
  std::string split = "val";
  double val_fraction = 0.1;
  bool val_fraction_given = false;
  int64_t batch = 32;
  int64_t block = 0;  // 0: the model's context
  int threads = 0;
  bool json = false;
};

// The caching allocator keeps buffers by size: before a last, shorter batch its cache of the full
// batches' sizes is handed back, so that one pass's worth is all the loop ever holds.
void before_batch(int64_t count, int64_t batch) {
  if (count != batch) empty_cache();
}

// An encoder-decoder over the pairs of a split: the loss of its targets given the sources
// (teacher forcing, mean over every predicted token, end token included) and what greedy
// decoding gets right.
void eval_pairs(const EvalFlags& f, train::LoadedModel& loaded, const std::string& text,
                data::Split split) {
  nn::EncoderDecoder& model = *loaded.seq2seq;
  const data::PairDataset pairs(data::parse_pairs(text, f.data), *loaded.tokenizer,
                                model.config().max_position_embeddings, f.val_fraction, f.data);
  const int64_t n = pairs.size(split);
  if (n == 0) throw ValueError(fmt::format("{}: the {} split holds no pairs", f.data, f.split));
  int64_t longest = 0;  // positions: a source, or a target with its start or end token
  for (int64_t i = 0; i < n; ++i) {
    longest = std::max({longest, static_cast<int64_t>(pairs.source(split, i).size()),
                        static_cast<int64_t>(pairs.target(split, i).size()) + 1});
  }
  // A batch the machine cannot hold is refused before its first pass, naming --batch, rather than
  // growing until the out-of-memory killer ends the process with no message.
  check_memory_in_flag_terms(train::estimate_eval_memory(model.config(), std::min(f.batch, n), longest),
                             "--batch");
  double total = 0.0;
  int64_t tokens = 0;
  {
    NoGradGuard no_grad;
    model.eval();
    for (int64_t first = 0; first < n; first += f.batch) {
      const int64_t count = std::min(f.batch, n - first);
      before_batch(count, f.batch);
      const data::PairBatch b = pairs.batch(split, first, count);
      int64_t predicted = 0;
      for (const double t : b.targets.to_vector()) predicted += t != nn::EncoderDecoder::kIgnoreIndex;
      total += model.loss(b.source, b.source_lengths, b.inputs, b.targets).item() * static_cast<double>(predicted);
      tokens += predicted;
    }
  }
  const double loss = total / static_cast<double>(tokens);
  const seq2seq::PairAccuracy accuracy = seq2seq::pair_accuracy(model, pairs, *loaded.tokenizer, split, 0, f.batch);
  if (f.json) {
    fmt::print("{}\n", nlohmann::json{{"loss", loss}, {"perplexity", std::exp(loss)}, {"tokens", tokens},
                                      {"pairs", n}, {"exact_match", accuracy.exact_match},
                                      {"char_accuracy", accuracy.char_accuracy}}.dump());
  } else {
    fmt::print("{} split of {}: loss {:.4f}, perplexity {:.3f} over {} predicted tokens; greedy "
               "decoding: exact match {:.4f}, character accuracy {:.4f} on {} pairs\n",
               f.split, f.data, loss, std::exp(loss), tokens, accuracy.exact_match,
               accuracy.char_accuracy, n);
  }
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

void run_eval(EvalFlags f) {
  set_num_threads(f.threads);
  train::LoadedModel loaded = train::load_any_model(f.model);
  if (loaded.is_encoder_decoder() && f.block > 0) {
    throw UsageError(fmt::format("--block: {} is an encoder-decoder, which reads whole pairs", f.model));
  }
  std::string text;
  if (f.data.empty()) {  // the run's own text, split as it was in training
    const std::optional<train::RunState> run = train::trained_on(f.model);
    if (!run) {
      throw UsageError(fmt::format("{} does not say what it was trained on; pass --data", f.model));
    }
    f.data = run->data_source;
    if (!f.val_fraction_given) f.val_fraction = run->val_fraction;
    text = read_run_text(*run, "--data");
  } else {
    text = data::load_text(f.data);
  }
  const data::Split split = f.split == "train" ? data::Split::train
                            : f.split == "all" ? data::Split::all
                                               : data::Split::val;
  if (loaded.is_encoder_decoder()) return eval_pairs(f, loaded, text, split);
  const int64_t block = f.block > 0 ? f.block : loaded.config.block_size;
  if (block > loaded.config.block_size && nn::has_context_limit(loaded.config.position_embedding)) {
    throw ValueError(fmt::format(
        "--block {} exceeds the context {} of {}, whose learned position embeddings stop there; "
        "only models trained with --pos sinusoidal, rope, alibi or none run on longer windows",
        block, loaded.config.block_size, f.model));
  }
  // Only the split asked for must hold a window; the message is in the flags' terms.
  const data::TextDataset dataset = [&] {
    try {
      return data::make_dataset(text, data::absolute_source(f.data), *loaded.tokenizer, block, f.val_fraction, split);
    } catch (const ValueError& e) {
      throw ValueError(in_flag_terms(e));
    }
  }();
  const int64_t windows = dataset.num_windows(split);
  if (windows == 0) {
    throw ValueError(fmt::format("{}: the {} split is shorter than one window of {} characters",
                                 f.data, f.split, block + 1));
  }
  check_memory_in_flag_terms(train::estimate_eval_memory(loaded.config, std::min(f.batch, windows), block));
  // Every window has the same length, so the mean of window-batch means weighted by their size
  // is the mean over every predicted token.
  NoGradGuard no_grad;
  loaded.model->eval();
  const std::vector<int64_t> token_bytes = bytes_of_tokens(*loaded.tokenizer);
  double total = 0.0;
  int64_t bytes = 0;
  for (int64_t first = 0; first < windows; first += f.batch) {
    const int64_t count = std::min(f.batch, windows - first);
    before_batch(count, f.batch);
    const data::Batch batch = dataset.window_batch(split, first, count);
    total += loaded.model->loss(batch.inputs, batch.targets).item() * static_cast<double>(count);
    bytes += bytes_of_targets(batch.targets, token_bytes);
  }
  const double loss = total / static_cast<double>(windows);
  if (!std::isfinite(loss)) {
    throw ValueError(fmt::format("{}: the loss over the {} split of {} is not finite ({})",
                                 f.model, f.split, f.data, loss));
  }
  const int64_t tokens = windows * block;
  // The loss over every predicted token in bits, shared by the bytes those tokens stand for: a
  // measure that compares models whatever their tokens.
  const double bits_per_byte = loss * static_cast<double>(tokens) / (std::log(2.0) * static_cast<double>(bytes));
  if (f.json) {
    fmt::print("{}\n", nlohmann::json{{"loss", loss}, {"perplexity", std::exp(loss)}, {"tokens", tokens},
                                      {"bits_per_byte", bits_per_byte}}.dump());
  } else {
    fmt::print("{} split of {}: loss {:.4f}, perplexity {:.3f} over {} predicted tokens "
               "(windows of {}), {:.4f} bits per byte\n",
               f.split, f.data, loss, std::exp(loss), tokens, block, bits_per_byte);
  }
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Loss and perplexity over a whole split, in non-overlapping context windows (an "
              "encoder-decoder: over its pairs, with exact match and character accuracy)");
  set_memory_advice(*cmd, "lower --batch (an encoder-decoder's pairs) or --block (a GPT's window), "
                          "or evaluate a smaller model than --model's");
  cmd->add_option("--model", flags->model, "checkpoint directory written by tinygpt train")->type_name("DIR")->required();
  cmd->add_option("--data", flags->data,
                  "UTF-8 text file (builtin:toy for the toy corpus; default: the text the run "
                  "trained on, split as in training)")
      ->type_name("FILE");
  cmd->add_option("--split", flags->split, "val, train or all")->check(CLI::IsMember({"val", "train", "all"}))->capture_default_str();
  cmd->add_option("--val-fraction", flags->val_fraction, "share of the text that is the val split (default: the run's when --data is not given)")->check(number_in(0.0, 0.9))->capture_default_str();
  cmd->add_option("--block", flags->block,
                  "window length (default: the model's context); longer than it tests length "
                  "extrapolation, refused for learned positions")
      ->check(integer_in(1, 65536));
  cmd->add_option("--batch", flags->batch, "windows per forward pass (an encoder-decoder: pairs, also in greedy decoding)")->check(integer_in(1, int64_t{1} << 16))->capture_default_str();
  add_threads_flag(*cmd, flags->threads);
  cmd->add_flag("--json", flags->json,
                "print {\"loss\", \"perplexity\", \"tokens\", \"bits_per_byte\"} as JSON (a GPT; bits per "
                "byte: the loss in bits over the bytes of the predicted tokens' text); for an encoder-decoder also "
                "\"pairs\", \"exact_match\" and \"char_accuracy\" of greedy decoding");
  cmd->callback([flags, cmd] {
    flags->val_fraction_given = cmd->count("--val-fraction") > 0;
    run_eval(*flags);
  });
}

}  // namespace tinygpt::cli
