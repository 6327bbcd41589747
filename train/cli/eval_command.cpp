// tinygpt eval: deterministic loss and perplexity of a model over a whole split of a text.
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/train/checkpoint.hpp"
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

void run_eval(EvalFlags f) {
  set_num_threads(f.threads);
  train::LoadedModel loaded = train::load_model(f.model);
  const bool runs_own_text = f.data.empty();
  if (runs_own_text) {  // the run's own text, split as it was in training
    const std::optional<train::RunState> run = train::trained_on(f.model);
    if (!run) {
      throw UsageError(fmt::format("{} does not say what it was trained on; pass --data", f.model));
    }
    f.data = run->data_source;
    if (!f.val_fraction_given) f.val_fraction = run->val_fraction;
  }
  const std::string text = runs_own_text ? with_data_hint("--data", [&] { return data::load_text(f.data); })
                                         : data::load_text(f.data);
  const data::Split split = f.split == "train" ? data::Split::train
                            : f.split == "all" ? data::Split::all
                                               : data::Split::val;
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
      return data::make_dataset(text, f.data, loaded.tokenizer, block, f.val_fraction, split);
    } catch (const ValueError& e) {
      throw ValueError(in_flag_terms(e.what()));
    }
  }();
  const int64_t windows = dataset.num_windows(split);
  if (windows == 0) {
    throw ValueError(fmt::format("{}: the {} split is shorter than one window of {} characters",
                                 f.data, f.split, block + 1));
  }
  // Every window has the same length, so the mean of window-batch means weighted by their size
  // is the mean over every predicted token.
  NoGradGuard no_grad;
  loaded.model->eval();
  double total = 0.0;
  for (int64_t first = 0; first < windows; first += f.batch) {
    const int64_t count = std::min(f.batch, windows - first);
    const data::Batch batch = dataset.window_batch(split, first, count);
    total += loaded.model->loss(batch.inputs, batch.targets).item() * static_cast<double>(count);
  }
  const double loss = total / static_cast<double>(windows);
  if (!std::isfinite(loss)) {
    throw ValueError(fmt::format("{}: the loss over the {} split of {} is not finite ({})",
                                 f.model, f.split, f.data, loss));
  }
  const int64_t tokens = windows * block;
  if (f.json) {
    fmt::print("{}\n", nlohmann::json{{"loss", loss}, {"perplexity", std::exp(loss)}, {"tokens", tokens}}.dump());
  } else {
    fmt::print("{} split of {}: loss {:.4f}, perplexity {:.3f} over {} predicted characters "
               "(windows of {})\n",
               f.split, f.data, loss, std::exp(loss), tokens, block);
  }
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Loss and perplexity over a whole split, in non-overlapping context windows");
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
  cmd->add_option("--batch", flags->batch, "windows per forward pass")->check(integer_in(1, int64_t{1} << 16))->capture_default_str();
  cmd->add_option("--threads", flags->threads, "threads for OpenMP and OpenBLAS (0: all cores)")->check(integer_in(0, 256))->capture_default_str();
  cmd->add_flag("--json", flags->json, "print {\"loss\", \"perplexity\", \"tokens\"} as JSON");
  cmd->callback([flags, cmd] {
    flags->val_fraction_given = cmd->count("--val-fraction") > 0;
    run_eval(*flags);
  });
}

}  // namespace tinygpt::cli
