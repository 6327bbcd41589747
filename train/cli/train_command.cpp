// tinygpt train: fit a GPT on the built-in toy corpus or a text file, checkpointing into --out.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/toy_corpus.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/plot/loss_plot.hpp"
#include "tinygpt/train/progress.hpp"

namespace tinygpt::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The library's TrainOptions suit a few quick steps; the command's defaults are the demo run:
// the default model on the toy corpus forms previous-token and induction heads in about a
// minute on 2 cores with these (README: "What the demo shows"). The high learning rate is what
// makes a sharp previous-token head form reliably (at 1e-3 to 1e-2 layer 0 often stays a set of
// blurred local heads); larger models want a smaller one.
train::TrainOptions demo_options() {
  train::TrainOptions o;
  o.steps = 8000;
  o.batch = 16;
  o.lr = 2e-2;
  o.min_lr = 2e-3;
  o.warmup = 200;
  o.eval_every = 500;
  return o;
}

struct TrainFlags {
  std::string data;
  std::string out = "runs/tinygpt";
  std::string resume;
  bool force = false;
  double val_fraction = 0.1;
  int threads = 0;
  ModelFlags model;
  train::TrainOptions options = demo_options();
};

// Flags that define the run; a resumed run takes them from its checkpoint. The others (--steps,
// --eval-every, --eval-iters, --threads) may change when resuming.
const char* const kFixedWhenResuming[] = {
    "--data", "--layers", "--heads", "--d-model", "--block", "--dropout", "--batch",
    "--lr", "--min-lr", "--warmup", "--lr-decay-steps", "--weight-decay", "--beta1",
    "--beta2", "--grad-clip", "--seed", "--optimizer", "--momentum", "--val-fraction", "--force"};

// The loss log (log.jsonl): one JSON object per step and per evaluation.
struct LossLog {
  std::vector<std::string> lines;

  void add(const json& entry) { lines.push_back(entry.dump()); }
  // The training curve: every step's loss, and the evaluations' train and val losses.
  void save_curve(const std::string& path, const std::string& title) const {
    std::vector<plot::LossPoint> steps, val;
    for (const auto& line : lines) {
      const json e = json::parse(line);
      const double step = e.value("step", 0.0);
      if (e.contains("loss")) steps.push_back({step, e["loss"].get<double>()});
      if (e.contains("val_loss") && e["val_loss"].is_number()) val.push_back({step, e["val_loss"].get<double>()});
    }
    plot::save_loss_curve(path, steps, val, title);
  }
  std::string text() const {
    std::string out;
    for (const auto& line : lines) out += line + "\n";
    return out;
  }
  // Keeps what a checkpoint at `step` had logged (a resumed run rewrites the rest).
  static LossLog read(const std::string& path, int64_t step) {
    LossLog log;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      const json entry = json::parse(line, nullptr, false);
      if (!entry.is_discarded() && entry.value("step", int64_t{0}) <= step) log.lines.push_back(line);
    }
    return log;
  }
};

void check_output_dir(const TrainFlags& f) {
  if (train::has_checkpoint(f.out) && !f.force) {
    throw io::IOError(fmt::format(
        "{} already holds a checkpoint; pass --resume {} to continue it, or --force to replace it",
        f.out, f.out));
  }
  std::error_code ec;
  fs::create_directories(f.out, ec);
  if (ec || !fs::is_directory(f.out)) {
    throw io::IOError(fmt::format("cannot create output directory {}: {}", f.out,
                              ec ? ec.message() : "not a directory"));
  }
  io::check_writable(f.out);
}

void run_train(TrainFlags f, const CLI::App& cmd) {
  set_num_threads(f.threads);
  const bool resuming = !f.resume.empty();
  train::RunState run;
  std::unique_ptr<nn::GPT> model;
  std::unique_ptr<data::CharTokenizer> tokenizer;

  if (resuming) {
    for (const char* flag : kFixedWhenResuming) {
      if (cmd.count(flag) > 0) {
        throw ValueError(fmt::format("{} cannot be changed when resuming: the run in {} keeps its own",
                                     flag, f.resume));
      }
    }
    if (cmd.count("--out") > 0 && fs::path(f.out) != fs::path(f.resume)) {
      throw ValueError(fmt::format("--resume writes back into {}; do not also pass --out {}",
                                   f.resume, f.out));
    }
    f.out = f.resume;
    train::LoadedModel loaded = train::load_model(f.resume);
    run = train::load_run_state(f.resume);
    if (cmd.count("--steps") > 0) run.options.steps = f.options.steps;
    if (cmd.count("--eval-every") > 0) run.options.eval_every = f.options.eval_every;
    if (cmd.count("--eval-iters") > 0) run.options.eval_iters = f.options.eval_iters;
    if (run.options.steps <= run.step) {
      throw ValueError(fmt::format("{} is already at step {}; pass --steps above that to continue",
                                   f.resume, run.step));
    }
    model = std::move(loaded.model);
    tokenizer = std::make_unique<data::CharTokenizer>(std::move(loaded.tokenizer));
  } else {
    if (f.options.min_lr > f.options.lr) {
      throw ValueError(fmt::format(
          "--min-lr {} is above --lr {}: the learning rate decays from --lr down to --min-lr",
          f.options.min_lr, f.options.lr));
    }
    run.options = f.options;
    run.data_source = f.data.empty() ? kToyCorpus : f.data;
    run.val_fraction = f.val_fraction;
    run.best_val_loss = NAN;
  }

  const std::string text = load_text(run.data_source);
  if (!resuming) tokenizer = std::make_unique<data::CharTokenizer>(data::CharTokenizer::fit(text));
  const data::TextDataset dataset =
      make_dataset(text, run.data_source, *tokenizer,
                   resuming ? model->config().block_size : f.model.block, run.val_fraction);
  if (!resuming) model = std::make_unique<nn::GPT>(f.model.config(tokenizer->vocab_size()), run.options.seed);

  train::Trainer trainer(*model, dataset, run.options);
  // Every check has passed: only now is --out created, so a refused run leaves nothing behind.
  if (!resuming) check_output_dir(f);
  LossLog log;
  const std::string log_path = (fs::path(f.out) / "log.jsonl").string();
  if (resuming) {
    train::load_optimizer_state(f.out, trainer.optimizer(), run.step);
    trainer.data_generator().set_state(run.data_rng);
    model->dropout_generator().set_state(run.dropout_rng);
    trainer.set_steps_done(run.step);
    log = LossLog::read(log_path, run.step);
  }

  train::ProgressReporter progress(run.options.steps);
  progress.message(fmt::format(
      "{} {}: {} parameters ({} layers, {} heads, d_model {}, context {}), vocabulary {}, "
      "{} training tokens",
      resuming ? "resuming" : "training", run.data_source, model->num_parameters(),
      model->config().n_layer, model->config().n_head, model->config().n_embd,
      model->config().block_size, tokenizer->vocab_size(), dataset.size(data::Split::train)));

  auto checkpoint = [&] {
    run.step = trainer.steps_done();
    run.data_rng = trainer.data_generator().state();
    run.dropout_rng = model->dropout_generator().state();
    train::save_checkpoint(f.out, *model, *tokenizer, &trainer.optimizer(), &run,
                           {{"log.jsonl", log.text()}});
  };

  const int64_t first_step = trainer.steps_done();
  const auto start = std::chrono::steady_clock::now();
  // Runs a step or an evaluation. If it diverged, nothing more is written and the error says
  // which checkpoint is left.
  auto unless_diverged = [&](auto&& call) {
    try {
      return call();
    } catch (const train::DivergedError& e) {
      throw train::DivergedError(
          run.step > 0 ? fmt::format("{}; stopped. The last good checkpoint (step {}) is kept in {}",
                                     e.what(), run.step, f.out)
                       : fmt::format("{}; stopped before the run's first checkpoint: it saved "
                                     "nothing in {}", e.what(), f.out));
    }
  };
  while (!trainer.done()) {
    const train::StepStats s = unless_diverged([&] { return trainer.step(); });
    log.add({{"step", s.step}, {"loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm},
             {"tokens_per_s", s.seconds > 0 ? s.tokens / s.seconds : 0.0}});
    progress.on_step(s);
    if (s.step % run.options.eval_every == 0 || trainer.done()) {
      const train::EvalStats e = unless_diverged([&] { return trainer.evaluate(); });
      log.add({{"step", e.step}, {"train_loss", e.train_loss},
               {"val_loss", std::isnan(e.val_loss) ? json(nullptr) : json(e.val_loss)}});
      progress.on_eval(e);
      if (!std::isnan(e.val_loss) && !(e.val_loss >= run.best_val_loss)) run.best_val_loss = e.val_loss;
      checkpoint();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.message(fmt::format(
      "done: {} steps in {}, {:.0f} tokens/s; best val loss {:.4f}; checkpoint in {}",
      trainer.steps_done() - first_step, train::format_duration(seconds),
      progress.tokens_per_second(), run.best_val_loss, f.out));

  const std::string curve = (fs::path(f.out) / "loss.png").string();
  log.save_curve(curve, fmt::format("{}: {} layers, d_model {}", run.data_source,
                                    model->config().n_layer, model->config().n_embd));
  fmt::print("loss curve: {}\n\n", curve);
  if (model->config().block_size < 4) {
    progress.message("context shorter than 4: no head analysis (it probes with repeated sequences)");
    return;
  }
  const HeadProbeSet probes =
      make_probes(*tokenizer, model->config().block_size, "", run.data_source);
  show_heads(*model, *tokenizer, probes, (fs::path(f.out) / "heads").string(), false);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand("train", "Train a GPT on the built-in toy corpus or a text file");
  cmd->footer("\n" + wrap_words(data::describe_toy_corpus(), 96));
  cmd->add_option("--data", flags->data, "UTF-8 text file to train on (default: the built-in toy corpus)");
  cmd->add_option("--out", flags->out, "directory for the checkpoint, log and pictures")->capture_default_str();
  cmd->add_option("--resume", flags->resume, "continue the run saved in this directory, up to --steps");
  cmd->add_flag("--force", flags->force, "replace a checkpoint already in --out");
  flags->model.add_to(*cmd);
  auto& o = flags->options;
  const CLI::Validator non_negative = number_in(0.0, std::numeric_limits<double>::infinity());
  const CLI::Validator count = integer_in(0, std::numeric_limits<int64_t>::max());
  cmd->add_option("--batch", o.batch, "sequences per step")->check(integer_in(1, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--steps", o.steps, "total optimisation steps")->check(integer_in(1, int64_t{1} << 40))->capture_default_str();
  cmd->add_option("--lr", o.lr, "peak learning rate (the default suits the small default model; use ~1e-3 for larger ones)")->check(positive_number())->capture_default_str();
  cmd->add_option("--min-lr", o.min_lr, "learning rate at the end of the cosine decay")->check(non_negative)->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "linear warmup steps")->check(count)->capture_default_str();
  cmd->add_option("--lr-decay-steps", o.lr_decay_steps,
                  "step where the cosine decay reaches --min-lr (0: --steps); set it to the planned "
                  "total to extend the run later with --resume exactly")
      ->check(count)->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay")->check(non_negative)->capture_default_str();
  cmd->add_option("--beta1", o.beta1, "AdamW beta1")->check(number_in(0.0, 1.0, true))->capture_default_str();
  cmd->add_option("--beta2", o.beta2, "AdamW beta2")->check(number_in(0.0, 1.0, true))->capture_default_str();
  cmd->add_option("--grad-clip", o.grad_clip, "clip the global gradient norm (0: off)")->check(non_negative)->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "adamw or sgd")->check(CLI::IsMember({"adamw", "sgd"}))->capture_default_str();
  cmd->add_option("--momentum", o.momentum, "SGD momentum")->check(number_in(0.0, 1.0, true))->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed for initialisation, batches and dropout")->check(seed_value())->capture_default_str();
  cmd->add_option("--eval-every", o.eval_every, "evaluate and checkpoint every N steps")->check(integer_in(1, int64_t{1} << 40))->capture_default_str();
  cmd->add_option("--eval-iters", o.eval_iters, "batches per split in an evaluation")->check(integer_in(1, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--val-fraction", flags->val_fraction, "share of the text held out for validation")->check(number_in(0.0, 0.9))->capture_default_str();
  cmd->add_option("--threads", flags->threads, "threads for OpenMP and OpenBLAS (0: all cores)")->check(integer_in(0, 256))->capture_default_str();
  cmd->callback([flags, cmd] { run_train(*flags, *cmd); });
}

}  // namespace tinygpt::cli
