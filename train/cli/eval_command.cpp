// tinygpt eval: deterministic loss and perplexity of a model over a whole split of a text.
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/analysis/task_commands.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
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
  bool pseudo = false;
};

// The settings that size one pass, as flags: "--batch/--block".
std::string rows_flags(const analysis::TaskCommands& commands) {
  std::string flags;
  for (const std::string& setting : commands.eval_rows_settings()) {
    flags += (flags.empty() ? "" : "/") + flag_of(setting);
  }
  return flags;
}

void run_eval(EvalFlags f) {
  set_num_threads(f.threads);
  const std::unique_ptr<train::Task> task = train::load_task(f.model);
  const std::unique_ptr<analysis::TaskCommands> commands = analysis::commands_for(*task, f.model);
  analysis::EvalRequest request;
  if (f.data.empty()) {  // the run's own text, split as it was in training
    const std::optional<train::RunState> run = train::trained_on(f.model);
    if (!run) {
      throw UsageError(fmt::format("{} does not say what it was trained on; pass --data", f.model));
    }
    f.data = run->data_source;
    if (!f.val_fraction_given) f.val_fraction = run->val_fraction;
    request.text = read_run_text(*run, "--data");
  } else {
    request.text = data::load_text(f.data);
  }
  request.data_source = f.data;
  request.split_name = f.split;
  request.split = f.split == "train" ? data::Split::train
                  : f.split == "all" ? data::Split::all
                                     : data::Split::val;
  request.val_fraction = f.val_fraction;
  request.batch = f.batch;
  request.block = f.block;
  request.pseudo = f.pseudo;
  const analysis::MethodOutput out = [&] {
    try {
      return in_flag_terms_of([&] { return commands->evaluate(request); });
    } catch (const train::MemoryError& e) {
      throw ValueError(e.message(rows_flags(*commands), kModelFlags));
    }
  }();
  fmt::print("{}", f.json ? out.json.dump() + "\n" : out.text);
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Loss and perplexity over a whole split, in non-overlapping context windows (an "
              "encoder-decoder: over its pairs, with exact match and character accuracy; an "
              "encoder: masked-token loss and accuracy)");
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
  cmd->add_flag("--pseudo", flags->pseudo,
                "an encoder's pseudo-perplexity too: each character masked alone, over the split's "
                "first 256 windows (a pass of a window's length rows per window)");
  add_threads_flag(*cmd, flags->threads);
  cmd->add_flag("--json", flags->json,
                "print {\"loss\", \"perplexity\", \"tokens\", \"bits_per_byte\"} as JSON (a GPT; bits per "
                "byte: the loss in bits over the bytes of the predicted tokens' text); for an encoder-decoder also "
                "\"pairs\", \"exact_match\" and \"char_accuracy\" of greedy decoding; an encoder: \"masked_loss\" "
                "and \"masked_accuracy\" under a fixed, seeded masking (the same every time), "
                "\"masked\", \"windows\", and with --pseudo \"pseudo_perplexity\" and \"pseudo_windows\"");
  cmd->callback([flags, cmd] {
    flags->val_fraction_given = cmd->count("--val-fraction") > 0;
    run_eval(*flags);
  });
}

}  // namespace tinygpt::cli
