// A model of your own, trained by the library's run with everything `tinygpt train` has:
// checkpoints, exact resume, log.jsonl, evaluation, head scores and the explorer page.
//   train_own_model --out DIR --steps N            a new run of N steps in DIR
//   train_own_model --out DIR --steps N --resume   the run in DIR continued to N steps
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <string>

#include "own_llama.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/train/fit.hpp"
#include "tinygpt/train/run.hpp"

using namespace tinygpt;

namespace {

struct Args {
  std::string out;
  int64_t steps = 0;
  bool resume = false;
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--out") == 0 && has_value) {
      args.out = argv[++i];
    } else if (std::strcmp(argv[i], "--steps") == 0 && has_value) {
      args.steps = std::stoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--resume") == 0) {
      args.resume = true;
    } else {
      throw ValueError(std::string("unknown argument ") + argv[i] +
                       "; usage: train_own_model --out DIR --steps N [--resume]");
    }
  }
  if (args.out.empty() || args.steps <= 0) {
    throw ValueError("usage: train_own_model --out DIR --steps N [--resume]");
  }
  return args;
}

// The user code: the model registered by its type, its run started (or resumed), fitted and
// reported by the library.
void train_own_model(const Args& args) {
  train::register_causal_lm("own-llama", [](const nlohmann::json& config, uint64_t seed) {
    return std::make_unique<own::OwnLlama>(own::OwnLlamaConfig::from_json(config), seed);
  });
  const nlohmann::json config = {{"model_type", "own-llama"}, {"block_size", 32},
                                 {"n_layer", 2}, {"n_head", 4}, {"n_embd", 64}};
  train::TrainOptions options;
  options.steps = args.steps;
  options.batch = 8;
  options.warmup = 10;
  options.lr_decay_steps = 1000;  // fixed, so a run stopped and resumed equals one never stopped
  options.eval_every = 10;
  options.eval_iters = 4;
  train::ResumeChanges changes;  // a resumed run keeps its own config and options but the steps
  changes.steps = args.steps;
  train::Run run = args.resume ? train::Run::resume(args.out, changes)
                               : train::Run::start(args.out, config, options, data::kToyCorpus);
  train::fit(run, {});  // steps, an evaluation and a checkpoint every eval_every, log.jsonl
  const heads::ProbeSet probes = heads::dataset_probes(
      run.task().as<train::LanguageModelTask>().dataset(), run.tokenizer(), run.data_source());
  analysis::report_run(run, &probes);  // head scores, heatmaps and the explorer page, report.html
  fmt::print("{}: step {}, best val loss {:.4f}\n", run.dir(), run.steps_done(), run.best_val_loss());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    train_own_model(parse_args(argc, argv));
  } catch (const std::exception& e) {
    fmt::print(stderr, "train_own_model: {}\n", e.what());
    return 1;
  }
}
