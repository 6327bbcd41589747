// tinygpt train: fit a GPT on the built-in toy corpus or a text file, checkpointing into --out.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "commands.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/toy_corpus.hpp"
#include "tinygpt/distributed/communicator.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/heads/formation.hpp"
#include "tinygpt/train/progress.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::cli {
namespace {

namespace fs = std::filesystem;

// The library's TrainOptions suit a few quick steps; the command's defaults are the demo run:
// the default model on the toy corpus forms a sharp previous-token head and induction heads
// within a minute on 2 cores, on every seed measured (docs/HEADS.md, "The recipe"). The previous-
// token head sharpens only after the induction heads form, from their gradient: the high learning
// rate lets it (at 1e-2 layer 0 mostly stays a set of blurred local heads) and beta2 0.95 makes
// it quick (with 0.99 it took the rest of the run, or never finished, on some seeds). Larger
// models want a smaller learning rate.
train::TrainOptions demo_options() {
  train::TrainOptions o;
  o.steps = 8000;
  o.batch = 16;
  o.lr = 2e-2;
  o.min_lr = 2e-3;
  o.warmup = 200;
  o.beta2 = 0.95;
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

// A resumed run keeps what defines it: its model, data and optimiser settings. Its flags may
// be given again when resuming, with the run's own values (the command line that started it
// works with --resume added); --steps, --eval-every, --eval-iters and --threads may change, and
// --force accepts data that changed since the run started. These are the kept flags but --data (compared as a path), with their
// values as text (fmt prints a double as the shortest text that reads back as it).
std::vector<std::pair<const char*, std::string>> fixed_flag_values(const TrainFlags& f) {
  const auto& o = f.options;
  const auto& m = f.model;
  const auto text = [](const auto& value) { return fmt::format("{}", value); };
  return {{"--layers", text(m.layers)},       {"--heads", text(m.heads)},
          {"--d-model", text(m.d_model)},     {"--block", text(m.block)},
          {"--dropout", text(m.dropout)},     {"--pos", m.pos},
          {"--kv-heads", text(m.kv_heads)},   {"--batch", text(o.batch)},
          {"--grad-accum", text(o.grad_accum)},
          {"--lr", text(o.lr)},               {"--min-lr", text(o.min_lr)},
          {"--warmup", text(o.warmup)},       {"--lr-decay-steps", text(o.lr_decay_steps)},
          {"--weight-decay", text(o.weight_decay)}, {"--beta1", text(o.beta1)},
          {"--beta2", text(o.beta2)},         {"--grad-clip", text(o.grad_clip)},
          {"--seed", text(o.seed)},           {"--optimizer", o.optimizer},
          {"--momentum", text(o.momentum)},   {"--val-fraction", text(f.val_fraction)}};
}

// The flags that would start `run`.
TrainFlags flags_of(train::Run& run) {
  TrainFlags f;
  const nn::GPTConfig& c = run.model().config();
  f.model = {c.n_layer, c.n_head, c.n_embd, c.block_size, c.dropout,
             nn::position_embedding_name(c.position_embedding), c.kv_heads()};
  f.options = run.options();
  f.data = run.data_source();
  f.val_fraction = run.val_fraction();
  return f;
}

// Refuses a flag given with another value than the run's own.
void check_resume_flags(const TrainFlags& given, const CLI::App& cmd, train::Run& run) {
  const auto differs = [&](const std::string& flag, const std::string& value,
                           const std::string& own) {
    return ValueError(fmt::format("{} {} differs from the run's {} in {}; a resumed run keeps its own",
                                  flag, value, own, run.dir()));
  };
  if (cmd.count("--data") > 0 && !data::same_source(given.data, run.data_source())) {
    throw differs("--data", given.data, run.data_source());
  }
  const auto values = fixed_flag_values(given), own = fixed_flag_values(flags_of(run));
  for (size_t i = 0; i < values.size(); ++i) {
    if (cmd.count(values[i].first) > 0 && values[i].second != own[i].second) {
      throw differs(values[i].first, values[i].second, own[i].second);
    }
  }
}

// The OpenMP team of each rank: --threads if given, else the cores of this machine shared among
// the ranks on it (2 ranks on 2 cores: 1 thread each), so they never oversubscribe the cores.
int threads_per_rank(int requested, const distributed::Communicator& world) {
  if (requested > 0 || world.size() == 1) return requested;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / world.local_size());
}

void check_mpi_build() {
  const char* ranks = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!distributed::mpi_available() && ranks != nullptr && std::string(ranks) != "1") {
    throw ValueError(fmt::format(
        "started by mpirun with {} ranks, but this tinygpt was built without MPI (CMake found "
        "none): install libopenmpi-dev and rebuild", ranks));
  }
}

train::Run resume_run(const TrainFlags& f, const CLI::App& cmd, distributed::Communicator& world) {
  std::error_code ec;
  if (cmd.count("--out") > 0 && f.out != f.resume && !fs::equivalent(f.out, f.resume, ec)) {
    throw ValueError(fmt::format("--resume writes back into {}; do not also pass --out {}",
                                 f.resume, f.out));
  }
  train::ResumeChanges changes;
  if (cmd.count("--steps") > 0) changes.steps = f.options.steps;
  if (cmd.count("--eval-every") > 0) changes.eval_every = f.options.eval_every;
  if (cmd.count("--eval-iters") > 0) changes.eval_iters = f.options.eval_iters;
  changes.accept_changed_data = f.force;
  train::Run run = train::Run::resume(f.resume, changes, world);
  check_resume_flags(f, cmd, run);
  return run;
}

void run_train(const TrainFlags& f, const CLI::App& cmd) {
  check_mpi_build();
  // Data-parallel under mpirun: every rank runs this same function on its slice of each batch;
  // rank 0 alone writes the checkpoint, log, pictures and progress.
  distributed::Communicator& world = distributed::world();
  const bool root = world.is_root();
  set_num_threads(threads_per_rank(f.threads, world));
  const bool resuming = !f.resume.empty();
  // From here on SIGINT/SIGTERM stop the run at the end of a step, with a checkpoint.
  StopSignals stop_signals;
  std::optional<train::Run> started;
  // Setup fails on every rank or on none, with one message (the lowest failing rank's).
  world.together([&] {
    try {
      started.emplace(resuming ? resume_run(f, cmd, world)
                               : train::Run::start(f.out, f.model.config(), f.options,
                                                   f.data.empty() ? data::kToyCorpus : f.data,
                                                   f.val_fraction, f.force, world));
    } catch (const train::DataChangedError& e) {
      throw ValueError(fmt::format("--data {}; pass --force to resume on it anyway", e.change()));
    } catch (const ValueError& e) {
      throw ValueError(in_flag_terms(e.what()));
    } catch (const train::MemoryError& e) {
      throw ValueError(memory_in_flag_terms(e));
    }
  });
  train::Run& run = *started;
  const nn::GPTConfig& config = run.model().config();
  // The other ranks report to nowhere.
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> nowhere(
      root ? nullptr : std::fopen("/dev/null", "w"),
      [](std::FILE* file) { return file ? std::fclose(file) : 0; });
  train::ProgressReporter progress(run.options().steps, root ? stderr : nowhere.get());
  progress.message(fmt::format(
      "{} {}: {} parameters ({} layers, {} heads, {} key/value heads, d_model {}, context {}, {} "
      "positions), vocabulary {}, {} training tokens",
      resuming ? "resuming" : "training", run.data_source(), run.model().num_parameters(),
      config.n_layer, config.n_head, config.kv_heads(), config.n_embd, config.block_size,
      nn::position_embedding_name(config.position_embedding), run.tokenizer().vocab_size(),
      run.dataset().size(data::Split::train)));
  if (run.options().warmup > run.options().steps) {
    progress.message(fmt::format(
        "tinygpt: warning: --warmup {} is longer than the run (--steps {}): the learning rate "
        "stops at {:.3g} of --lr {}", run.options().warmup, run.options().steps,
        static_cast<double>(run.options().steps) / static_cast<double>(run.options().warmup),
        run.options().lr));
  }
  if (run.trainer().micro_batches() > 1) {
    progress.message(fmt::format(
        "batch {} per step: {} micro-batches of {} ({} rank{} x grad-accum {})", run.options().batch,
        run.trainer().micro_batches(), run.trainer().micro_batch_rows(), world.size(),
        world.size() > 1 ? "s" : "", run.options().grad_accum));
  }

  // Every evaluation also scores the heads (formation over time) on the run's own probes, and
  // the report at the end uses the same ones, when the probes can run.
  const std::string no_heads = heads::probe_obstacle(config);
  std::optional<heads::ProbeSet> probes;
  if (no_heads.empty()) {
    probes = heads::dataset_probes(run.dataset(), run.tokenizer(), run.data_source());
  }
  const int64_t first_step = run.steps_done();
  const auto start = std::chrono::steady_clock::now();
  if (const int signal = stop_signals.agreed(world)) {  // during setup: nothing to save
    progress.message(fmt::format("tinygpt: interrupted before the first step; {} is as it was",
                                 run.dir()));
    throw Interrupted{signal};
  }
  while (!run.done()) {
    const train::StepStats s = run.step();
    progress.on_step(s);
    const bool evaluating = s.step % run.options().eval_every == 0 || run.done();
    if (evaluating) {
      const std::string formation =
          probes ? heads::formation_record(run.model(), probes->probes).dump() : "";
      progress.on_eval(run.evaluate(formation));
      run.save();
    }
    if (const int signal = stop_signals.agreed(world)) {
      // The step is finished; its checkpoint (without an evaluation, as the same run never
      // interrupted would have none here) resumes exactly.
      if (!evaluating) run.save();
      progress.message(fmt::format(
          "tinygpt: interrupted at step {}; checkpoint saved in {}; resume with: tinygpt train "
          "--resume {}", s.step, run.dir(), run.dir()));
      throw Interrupted{signal};
    }
  }
  stop_signals.restore();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.message(fmt::format(
      "done: {} steps in {}, {:.0f} tokens/s; best val loss {:.4f}; checkpoint in {}",
      run.steps_done() - first_step, train::format_duration(seconds),
      progress.tokens_per_second(), run.best_val_loss(), run.dir()));

  const train::Trainer& trainer = run.trainer();
  if (world.size() > 1) {
    const double steps = static_cast<double>(trainer.steps_done() - first_step);
    progress.message(fmt::format(
        "all-reduce across {} ranks: {:.2f} ms and {:.2f} MB per step", world.size(),
        1e3 * world.stats().seconds / steps, static_cast<double>(world.stats().bytes) / steps / 1e6));
  }
  if (!root) return;
  if (!probes) progress.message(no_heads);
  analysis::report_run(run, probes ? &*probes : nullptr);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand("train", "Train a GPT on the built-in toy corpus or a text file");
  cmd->footer("\n" + wrap_words(data::describe_toy_corpus(), 96));
  cmd->add_option("--data", flags->data, "UTF-8 text file to train on (default: the built-in toy corpus)");
  cmd->add_option("--out", flags->out, "directory for the checkpoint, log and pictures")->capture_default_str();
  cmd->add_option("--resume", flags->resume, "continue the run saved in this directory, up to --steps; its other flags may be repeated with the values it has");
  cmd->add_flag("--force", flags->force, "replace a checkpoint already in --out; with --resume: resume although --data changed since the run started");
  flags->model.add_to(*cmd);
  auto& o = flags->options;
  const CLI::Validator non_negative = number_in(0.0, std::numeric_limits<double>::infinity());
  const CLI::Validator count = integer_in(0, std::numeric_limits<int64_t>::max());
  cmd->add_option("--batch", o.batch, "sequences per step")->check(integer_in(1, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--grad-accum", o.grad_accum,
                  "split each step's batch into N micro-batches whose gradients are summed "
                  "(token-weighted) before one clip and update: the same step in less memory; "
                  "N must divide --batch")
      ->check(integer_in(1, int64_t{1} << 20))->capture_default_str();
  // The flags a resumed run may change count once, the last time they are given, so that
  // "--steps M --resume DIR" can be put after the command line that started the run.
  const auto last_counts = [](CLI::Option* option) {
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  };
  last_counts(cmd->add_option("--steps", o.steps, "total optimisation steps (the last one given counts)")->check(integer_in(1, int64_t{1} << 40))->capture_default_str());
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
  last_counts(cmd->add_option("--eval-every", o.eval_every, "evaluate and checkpoint every N steps")->check(integer_in(1, int64_t{1} << 40))->capture_default_str());
  last_counts(cmd->add_option("--eval-iters", o.eval_iters, "batches per split in an evaluation")->check(integer_in(1, int64_t{1} << 20))->capture_default_str());
  cmd->add_option("--val-fraction", flags->val_fraction, "share of the text held out for validation")->check(number_in(0.0, 0.9))->capture_default_str();
  last_counts(cmd->add_option("--threads", flags->threads, "threads for OpenMP and OpenBLAS (0: all cores)")->check(integer_in(0, 256))->capture_default_str());
  cmd->callback([flags, cmd] { run_train(*flags, *cmd); });
}

}  // namespace tinygpt::cli
