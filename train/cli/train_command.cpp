// tinygpt train: fit a GPT on the built-in toy corpus or a text file, checkpointing into --out.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "families.hpp"
#include "process.hpp"
#include "tinygpt/autograd/gemm_backend.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/toy_corpus.hpp"
#include "tinygpt/distributed/communicator.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/analysis/fit_observers.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/analysis/task_commands.hpp"
#include "tinygpt/train/machine_peak.hpp"
#include "tinygpt/train/progress.hpp"
#include "tinygpt/train/fit.hpp"
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
  o.lr = 2e-2;  // and --min-lr, when not given, --lr / 10 (as nanoGPT): 2e-3
  o.warmup = 200;
  o.beta2 = 0.95;
  o.eval_every = 500;
  return o;
}

struct TrainFlags {
  std::string arch = default_family().arch;
  std::string data;
  std::string out = "runs/tinygpt";
  std::string resume;
  std::string init_from;
  std::string tokenizer;  // "", "bpe:N" or a tokenizer file or folder
  bool force = false;
  bool keep_best = false;
  bool json = false;
  bool verbose = false;
  double val_fraction = 0.1;
  int threads = 0;
  ModelFlags model;
  train::TrainOptions options = demo_options();
};

// A resumed run keeps what defines it: its model, data and optimiser settings. Its flags may
// be given again when resuming, with the run's own values (the command line that started it
// works with --resume added); --steps, --eval-every, --eval-iters and --threads may change,
// --precision with --force, and --force accepts data that changed since the run started. These
// are the kept flags but --data (compared as a path), with their values as text (fmt prints a
// double as the shortest text that reads back as it).
std::vector<std::pair<const char*, std::string>> fixed_flag_values(const TrainFlags& f) {
  const auto& o = f.options;
  const auto& m = f.model;
  const auto text = [](const auto& value) { return fmt::format("{}", value); };
  return {{"--arch", f.arch},
          {"--layers", text(m.layers)},       {"--heads", text(m.heads)},
          {"--d-model", text(m.d_model)},     {"--block", text(m.block)},
          {"--dropout", text(m.dropout)},     {"--pos", m.pos},
          {"--kv-heads", text(m.kv_heads)},   {"--attention", m.attention},
          {"--window", text(m.window)},       {"--global-tokens", text(m.global_tokens)},
          {"--stride", text(m.stride)},       {"--no-attention-scale", text(m.no_attention_scale)},
          {"--block-size", text(m.bigbird_block)}, {"--random-blocks", text(m.random_blocks)},
          {"--features", text(m.features)},   {"--redraw-every", text(m.redraw_every)},
          {"--cross", m.cross},               {"--cross-score", m.cross_score},
          {"--mask-prob", text(m.mask_prob)}, {"--pre-ln", text(m.pre_ln)},
          {"--batch", text(o.batch)},
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
  const Family& family = family_of(run.task());
  f.arch = family.arch;
  f.model = family.flags_of(run.task());
  f.options = run.options();
  f.data = run.data_source();
  f.val_fraction = run.val_fraction();
  return f;
}

// Refuses a flag given with another value than the run's own.
void check_resume_flags(const TrainFlags& given, const CLI::App& cmd, train::Run& run) {
  const auto differs = [&](const std::string& flag, const std::string& value,
                           const std::string& own) {
    return UsageError(fmt::format("{} {} differs from the run's {} in {}; a resumed run keeps its own",
                                  flag, value, own, run.dir()));
  };
  if (cmd.count("--data") > 0 && !data::same_source(given.data, run.data_source())) {
    throw differs("--data", given.data, run.data_source());
  }
  if (cmd.count("--precision") > 0 && given.options.precision != run.options().precision) {
    throw UsageError(fmt::format("--precision {} differs from the run's {} in {}; a resumed run "
                                 "keeps its own unless --force is given",
                                 given.options.precision, run.options().precision, run.dir()));
  }
  const auto values = fixed_flag_values(given), own = fixed_flag_values(flags_of(run));
  for (size_t i = 0; i < values.size(); ++i) {
    if (cmd.count(values[i].first) > 0 && values[i].second != own[i].second) {
      throw differs(values[i].first, values[i].second, own[i].second);
    }
  }
}

// The OpenMP team of each rank: --threads if given, else OMP_NUM_THREADS if set (mpirun -x passes
// it to every rank), else the cores of this machine shared among the ranks on it (2 ranks on 2
// cores: 1 thread each), so they never oversubscribe the cores.
int threads_per_rank(int requested, const distributed::Communicator& world) {
  if (requested > 0 || world.size() == 1 || omp_num_threads_from_env() > 0) return requested;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / world.local_size());
}

// The last evaluation against the best one, and which weights the run's folder keeps: an
// overfitting run must not read as if the checkpoint held its best loss.
std::string end_of_run(const train::Run& run, const train::EvalStats& last) {
  if (std::isnan(last.val_loss)) {
    return fmt::format("train loss {:.4f} at step {} (no validation split); checkpoint in {}",
                       last.train_loss, last.step, run.dir());
  }
  std::string text = fmt::format("val loss {:.4f} at step {}", last.val_loss, last.step);
  if (run.best_step() == last.step) {
    return text + fmt::format(" (the best); checkpoint in {} holds step {}", run.dir(), last.step);
  }
  text += fmt::format(", best {:.4f} at step {}; checkpoint in {} holds step {} (the last)",
                      run.best_val_loss(), run.best_step(), run.dir(), last.step);
  if (run.best_kept()) return text + fmt::format(", {} step {}", run.best_dir(), run.best_step());
  return text + (run.state().keep_best ? "; the best came before --keep-best, which keeps the next one"
                                       : "; --keep-best would keep the best too");
}

// train --json: the run's outcome as one object on stdout.
nlohmann::json summary_json(const train::Run& run, const train::EvalStats* last, int64_t steps_run,
                            double seconds, double tokens_per_s, int interrupted_by) {
  const auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"steps", run.steps_done()},
          {"steps_run", steps_run},
          {"seconds", seconds},
          {"tokens_per_s", tokens_per_s},
          {"train_loss", last ? number(last->train_loss) : nullptr},
          {"val_loss", last ? number(last->val_loss) : nullptr},
          {"eval_step", last ? nlohmann::json(last->step) : nullptr},
          {"best_val_loss", number(run.best_val_loss())},
          {"best_step", run.best_step() > 0 ? nlohmann::json(run.best_step()) : nullptr},
          {"checkpoint", run.dir()},
          {"checkpoint_step", run.saved_step()},
          {"best_checkpoint", run.best_kept() ? nlohmann::json(run.best_dir()) : nullptr},
          {"interrupted", interrupted_by != 0},
          {"data", run.data_source()}};
}

void check_mpi_build() {
  const char* ranks = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!distributed::mpi_available() && ranks != nullptr && std::string(ranks) != "1") {
    throw ValueError(fmt::format(
        "started by mpirun with {} ranks, but this tinygpt was built without MPI (CMake found "
        "none): install libopenmpi-dev and rebuild", ranks));
  }
}

// The model shape flags: a fine-tuned model's shape is its checkpoint's.
constexpr const char* kShapeFlags[] = {"--layers", "--heads", "--d-model", "--block", "--pos",
                                       "--kv-heads", "--attention", "--window", "--global-tokens",
                                       "--stride", "--block-size", "--random-blocks",
                                       "--no-attention-scale", "--features", "--redraw-every",
                                       "--pre-ln"};

// Calls visit(flag, default, field) for each flag a family may set, in the order --help lists them.
template <class Visit>
void visit_family_defaults(const FamilyDefaults& d, TrainFlags& f, Visit&& visit) {
  visit("--heads", d.heads, f.model.heads);
  visit("--d-model", d.d_model, f.model.d_model);
  visit("--block", d.block, f.model.block);
  visit("--steps", d.steps, f.options.steps);
  visit("--batch", d.batch, f.options.batch);
  visit("--lr", d.lr, f.options.lr);
  visit("--warmup", d.warmup, f.options.warmup);
  visit("--beta2", d.beta2, f.options.beta2);
  visit("--eval-every", d.eval_every, f.options.eval_every);
  visit("--eval-iters", d.eval_iters, f.options.eval_iters);
}

// A fine-tune's family is its checkpoint's: --arch, when given, must name it.
void adopt_init_from_family(TrainFlags& f, const CLI::App& cmd) {
  if (f.init_from.empty() || !f.resume.empty()) return;
  const std::optional<std::string> kind = train::model_kind(f.init_from);
  const std::vector<std::string> names = family_names();
  // A folder that cannot be read, or of a family that is not fine-tuned, is refused when loaded.
  if (std::find(names.begin(), names.end(), kind.value_or("")) == names.end() ||
      !family(*kind).takes_init_from || *kind == f.arch) {
    return;
  }
  if (cmd.count("--arch") > 0) {
    throw UsageError(fmt::format("--arch {}: --init-from {} holds {}; drop --arch or pass --arch {}",
                                 f.arch, f.init_from, family(*kind).noun, *kind));
  }
  f.arch = *kind;
}

void apply_family_defaults(TrainFlags& f, const CLI::App& cmd) {
  if (!f.resume.empty()) return;
  visit_family_defaults(family(f.arch).defaults, f, [&](const char* flag, const auto& value, auto& field) {
    if (cmd.count(flag) == 0 && value) field = *value;
  });
}

// "--heads 4 --steps 2000 ...": a family's defaults as --help states them.
std::string family_defaults_text(const Family& family) {
  TrainFlags unused;
  std::vector<std::string> parts;
  visit_family_defaults(family.defaults, unused, [&](const char* flag, const auto& value, auto&) {
    if (value) parts.push_back(fmt::format("{} {}", flag, *value));
  });
  return fmt::format("{}", fmt::join(parts, " "));
}

// What the command line alone shows to be wrong, refused before anything is read or written.
void check_flags(const TrainFlags& f, const CLI::App& cmd) {
  if (!f.resume.empty()) {
    std::error_code ec;
    if (cmd.count("--out") > 0 && f.out != f.resume && !fs::equivalent(f.out, f.resume, ec)) {
      throw UsageError(fmt::format("--resume writes back into {}; do not also pass --out {}",
                                   f.resume, f.out));
    }
    return;  // the run's own settings were checked when it started
  }
  const Family& family = cli::family(f.arch);
  if (!family.takes_init_from && !f.init_from.empty()) {
    throw UsageError(fmt::format("--init-from is {}'s flag; --arch {} does not take it",
                                 default_family().noun, f.arch));
  }
  if (!family.own_vocabulary.empty() && !f.tokenizer.empty()) {
    throw UsageError(fmt::format("--tokenizer is {}'s flag; {}'s vocabulary is {}", default_family().noun,
                                 family.noun, family.own_vocabulary));
  }
  if (!f.init_from.empty()) {
    for (const char* flag : kShapeFlags) {
      if (cmd.count(flag) > 0) {
        throw UsageError(fmt::format("{}: a model fine-tuned with --init-from keeps the shape of "
                                     "{}; drop the flag", flag, f.init_from));
      }
    }
    family.check_own_flags(cmd);
  } else {
    family.check(f.model, cmd);
  }
  try {
    f.options.validate();
  } catch (const ValueError& e) {
    throw UsageError(in_flag_terms(e));
  }
}

// --tokenizer: "bpe:N" (trained on the run's training split), or a tokenizer file or folder.
train::TokenizerChoice tokenizer_choice(const std::string& flag) {
  train::TokenizerChoice choice;
  if (flag.empty()) return choice;
  if (flag.rfind("bpe:", 0) != 0) {
    choice.given = load_tokenizer(flag);
    return choice;
  }
  const std::string size = flag.substr(4);
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(size.c_str(), &end, 10);
  if (size.empty() || *end != '\0' || errno != 0 || n < 256 || n > kMaxBpeVocab) {
    throw UsageError(fmt::format("--tokenizer {}: bpe:N needs a vocabulary N from 256 (the bytes) to {}",
                                 flag, kMaxBpeVocab));
  }
  choice.bpe_vocab_size = n;
  return choice;
}

train::Run resume_run(const TrainFlags& f, const CLI::App& cmd, distributed::Communicator& world) {
  train::ResumeChanges changes;
  changes.tokenizer = tokenizer_choice(f.tokenizer);
  if (cmd.count("--steps") > 0) changes.steps = f.options.steps;
  if (cmd.count("--eval-every") > 0) changes.eval_every = f.options.eval_every;
  if (cmd.count("--eval-iters") > 0) changes.eval_iters = f.options.eval_iters;
  changes.accept_changed_data = f.force;
  if (cmd.count("--data") > 0) changes.data_source = f.data;
  changes.accept_damaged_log = f.force;
  if (cmd.count("--precision") > 0 && f.force) changes.precision = f.options.precision;
  train::Run run = train::Run::resume(f.resume, changes, world);
  if (!run.damaged_log_note().empty() && world.is_root()) {
    fmt::print(stderr, "tinygpt: warning: {}\n", run.damaged_log_note());
  }
  if (!run.data_moved_from().empty() && world.is_root()) {
    fmt::print(stderr, "tinygpt: the run's text moved: {} -> {} (its recorded size and SHA-256 {})\n",
               run.data_moved_from(), run.data_source(), f.force ? "no longer bind, --force" : "match");
  }
  check_resume_flags(f, cmd, run);
  return run;
}

// train --verbose: which library and kernel run the f32 products and how fast, against the
// machine's peak -- and one warning line, naming the cause when it can, if they run below half.
// The peak is probed before the products and after them, and the higher reading kept.
void print_compute_check() {
  const train::MachinePeak before = train::measure_f32_peak();
  const double products = train::measure_f32_products(1024);
  const train::MachinePeak peak = train::higher_reading(before, train::measure_f32_peak());
  const GemmBackend backend = gemm_backend(DType::f32);
  fmt::print(stderr,
             "tinygpt: {} thread{}; f32 products on {} ({} kernel) at {:.0f} GFLOP/s, {:.2f} of "
             "the machine's f32 peak {:.0f} GFLOP/s ({}); own loops on {}\n",
             num_threads(), num_threads() == 1 ? "" : "s", backend.library, backend.kernel, products, products / peak.gflops,
             peak.gflops, peak.kernel, own_loops_isa());
  const std::string note = train::slow_products_note(products, peak.gflops);
  if (!note.empty()) fmt::print(stderr, "tinygpt: warning: {}\n", note);
}

// The run the flags start or resume, on every rank or on none: setup fails with one message (the
// lowest failing rank's), the library's refusals in the flags' terms.
train::Run open_run(const TrainFlags& f, const CLI::App& cmd, distributed::Communicator& world) {
  std::optional<train::Run> started;
  world.together([&] {
    try {
      const Family& family = cli::family(f.arch);
      const std::string data = !f.data.empty() ? f.data : family.default_data;
      if (!f.resume.empty()) {
        started.emplace(resume_run(f, cmd, world));
      } else if (!f.init_from.empty()) {
        train::InitFrom init;
        init.dir = f.init_from;
        if (cmd.count("--dropout") > 0) init.dropout = f.model.dropout;
        if (cmd.count("--mask-prob") > 0) init.mask_probability = f.model.mask_prob;
        started.emplace(train::Run::start(f.out, init, f.options, data, f.val_fraction, f.force, world,
                                          tokenizer_choice(f.tokenizer)));
      } else {
        started.emplace(train::Run::start(f.out, family.model_config(f.model, f.options.seed), f.options, data, f.val_fraction, f.force, world,
                                          tokenizer_choice(f.tokenizer)));
      }
    } catch (const UsageError&) {
      throw;
    } catch (const train::OptionError& e) {
      throw UsageError(in_flag_terms(e));
    } catch (const train::DataChangedError& e) {
      throw ValueError(fmt::format("--data {}; pass --force to resume on it anyway", e.change()));
    } catch (const train::DamagedLogError& e) {
      throw ValueError("", e, "; the weights and optimiser state are intact: pass --force to "
                              "resume with a new log (the damaged one is kept aside)");
    } catch (const train::DataMissingError& e) {
      throw ValueError("", e, "; if the run's text moved, pass --data with its new path (taken "
                              "when its bytes are the ones the run recorded)");
    } catch (const ValueError& e) {
      throw ValueError(in_flag_terms(e));
    } catch (const io::IOError& e) {  // the output folder's: it names --force or --resume
      throw io::IOError(in_flag_terms(e));
    } catch (const train::MemoryError& e) {
      throw ValueError(memory_in_flag_terms(e));
    }
  });
  return std::move(*started);
}

// The lines that open a run: its data and model, and what about its settings deserves a word.
void announce_run(train::Run& run, const TrainFlags& f, train::ProgressReporter& progress,
                  const distributed::Communicator& world) {
  const bool resuming = !f.resume.empty();
  progress.message(fmt::format("{} {}: {}", resuming ? "resuming" : "training", run.data_source(),
                               run.task().describe()));
  if (f.verbose && run.options().precision == "bf16") {
    progress.message(fmt::format(
        "bf16 products on {} ({})", bf16_products_description(bf16_products()),
        bf16_products_name(bf16_products())));
  }
  if (!run.state().init_from.empty() && !resuming) {
    progress.message(fmt::format("fine-tuning the weights of {}{}", run.state().init_from,
                                 run.state().init_from_step > 0
                                     ? fmt::format(" (trained {})", train::count_of(run.state().init_from_step, "step"))
                                     : ""));
  }
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
}

// The end of a run that trained to its last step: the summary line, and on the root rank the
// report and pictures. Returns the signal that stopped the drawing, or 0.
int finish_run(train::Run& run, const train::FitResult& result, double seconds,
               const analysis::FormationObserver& formation, train::ProgressReporter& progress,
               distributed::Communicator& world, std::FILE* report) {
  const int64_t steps = run.steps_done() - result.first_step;
  progress.message(fmt::format("done: {} in {}, {:.0f} tokens/s; {}", train::count_of(steps, "step"),
                               train::format_duration(seconds), progress.tokens_per_second(),
                               end_of_run(run, *result.last_eval)));
  if (world.size() > 1) {
    progress.message(fmt::format(
        "all-reduce across {} ranks: {:.2f} ms and {:.2f} MB per step", world.size(),
        1e3 * world.stats().seconds / static_cast<double>(steps),
        static_cast<double>(world.stats().bytes) / static_cast<double>(steps) / 1e6));
  }
  if (!world.is_root()) return 0;
  const int stopped = draw_unless_stopped([&] {
    if (!formation.no_heads().empty()) progress.message(formation.no_heads());
    analysis::commands_for(run.task(), run.dir())->report_run(run, formation.probes(), report);
  });
  if (stopped != 0) {
    analysis::remove_report(run.dir());  // a page written before the heatmaps were dropped
    const std::string page = (fs::path(run.dir()) / "report.html").string();
    progress.message(fmt::format("tinygpt: interrupted while drawing the pictures; checkpoint saved in "
                                 "{}; its heatmaps and {} were skipped: tinygpt heads --model {} "
                                 "--html {} draws them", run.dir(), page, run.dir(), page));
  }
  return stopped;
}

void run_train(TrainFlags f, const CLI::App& cmd) {
  adopt_init_from_family(f, cmd);
  apply_family_defaults(f, cmd);
  if (cmd.count("--min-lr") == 0) f.options.min_lr = f.options.lr / 10;
  check_mpi_build();
  // Data-parallel under mpirun: every rank runs this same function on its slice of each batch;
  // rank 0 alone writes the checkpoint, log, pictures and progress.
  distributed::Communicator& world = distributed::world();
  const bool root = world.is_root();
  set_num_threads(threads_per_rank(f.threads, world));
  check_flags(f, cmd);
  if (f.verbose && root) print_compute_check();
  analysis::check_report_paths(f.resume.empty() ? f.out : f.resume);  // before the folder is locked
  // From here on SIGINT/SIGTERM/SIGHUP stop the run at the end of a step, with a checkpoint.
  StopSignals stop_signals;
  train::Run run = open_run(f, cmd, world);
  run.check_ranks_agree();
  if (f.keep_best) run.keep_best();
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> nowhere(  // the other ranks report to nowhere
      root ? nullptr : std::fopen("/dev/null", "w"), [](std::FILE* file) { return file ? std::fclose(file) : 0; });
  train::ProgressReporter progress(run.options().steps, root ? stderr : nowhere.get());
  announce_run(run, f, progress, world);
  train::ProgressObserver shown(progress);
  analysis::FormationObserver formation(run);
  analysis::StaleReportObserver stale_report(root);
  const auto start = std::chrono::steady_clock::now();
  const train::FitResult result = train::fit(run, {&formation, &shown, &stale_report},
                                             [&] { return stop_signals.agreed(world); });
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto print_summary = [&](int interrupted_by) {
    if (!f.json || !root) return;
    fmt::print("{}\n", json_text(summary_json(run, result.last_eval ? &*result.last_eval : nullptr,
                                              run.steps_done() - result.first_step, seconds(),
                                              progress.tokens_per_second(), interrupted_by)));
    flush_stdout();
  };
  if (result.stopped_by != 0 && !result.saved_at_stop) {  // during setup: nothing to save
    progress.message(fmt::format("tinygpt: interrupted before the first step; {} is as it was", run.dir()));
    throw Interrupted{result.stopped_by};
  }
  if (result.stopped_by != 0) {
    if (root) analysis::draw_run_curves(run, nullptr);  // the curves as far as the checkpoint
    progress.message(fmt::format("tinygpt: interrupted at step {}; checkpoint saved in {}; resume with: "
                                 "tinygpt train --resume {}", run.steps_done(), run.dir(), run.dir()));
    print_summary(result.stopped_by);
    throw Interrupted{result.stopped_by};
  }
  stop_signals.restore();
  // Under --json, stdout carries the summary alone; the report's lines go with the progress.
  const int stopped = finish_run(run, result, seconds(), formation, progress, world, f.json ? stderr : stdout);
  print_summary(stopped);
  if (stopped != 0) throw Interrupted{stopped};
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand("train", "Train a GPT on the built-in toy corpus or a text file");
  cmd->footer("\n" + wrap_words(data::describe_toy_corpus(), 96));
  set_memory_advice(*cmd, fmt::format("lower {} (activations) or {} (model)", kActivationFlags, kModelFlags));
  std::vector<std::string> arch_help;
  for (const Family& family : families()) {
    arch_help.push_back(fmt::format(fmt::runtime(family.train_help), family_defaults_text(family)));
  }
  cmd->add_option("--arch", flags->arch, fmt::format("{}", fmt::join(arch_help, "; ")))
      ->check(CLI::IsMember(family_names()))->capture_default_str();
  cmd->add_option("--data", flags->data, "UTF-8 text file to train on (default: the built-in toy corpus, builtin:toy; an encoder's is builtin:toy-mlm, its form for a masked LM)")->type_name("FILE");
  cmd->add_option("--out", flags->out, "directory for the checkpoint, log and pictures")->type_name("DIR")->capture_default_str();
  CLI::Option* resume = cmd->add_option("--resume", flags->resume, "continue the run saved in this directory, up to --steps; its other flags may be given again with the values it has")->type_name("DIR");
  cmd->add_option("--init-from", flags->init_from,
                  "fine-tune: start a new run (step 0, new optimiser and schedule) from the weights "
                  "of this checkpoint (a GPT: a tinygpt run or a Hugging Face GPT-2 folder; an "
                  "encoder: an encoder run or a Hugging Face BertForMaskedLM folder with a "
                  "tokenizer.json, whose family and defaults the run takes); the model's shape "
                  "and vocabulary are its own, --dropout (and an encoder's --mask-prob) may change")
      ->type_name("DIR")
      ->excludes(resume);
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "the vocabulary (default: the text's characters): bpe:N trains byte-level BPE of N "
                  "tokens on the training split (the held-out text stays unseen), or a tokenizer.json "
                  "(tinygpt tokenizer train's, Hugging Face's byte-level BPE, a run's) or a folder with "
                  "GPT-2's vocab.json and merges.txt; stored in the run as tokenizer.json. --resume and "
                  "--init-from keep the run's own: one given must be the same")
      ->type_name("FILE");
  cmd->add_flag("--keep-best", flags->keep_best,
                "also keep the weights of the evaluation with the lowest val loss in OUT/best "
                "(sample, eval and heads read it; --resume continues from the last step); a "
                "resumed run keeps it on");
  cmd->add_option("--precision", flags->options.precision,
                  "precision of the products: f32, or bf16 (bf16 inputs, f32 accumulation, as "
                  "torch.autocast; weights, gradients, optimiser state, layer norm, softmax and "
                  "the loss stay f32; needs avx512_bf16; the products run on the CPU's bf16 dot "
                  "products or AMX tiles, or widened to f32 on its FMAs where those are faster, "
                  "TINYGPT_BF16_PRODUCTS=dot_pairs|f32_fma|amx to choose). The checkpoint is f32 "
                  "either way; a resumed run keeps its own unless --force")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--verbose", flags->verbose,
                "first say on stderr which library and kernel run the f32 products and their "
                "measured speed against the machine's peak (warning when below half)");
  cmd->add_flag("--json", flags->json,
                "end with a JSON summary on stdout (steps, losses, best step, tokens/s, "
                "checkpoint); the report's lines go to stderr");
  cmd->add_flag("--force", flags->force, "replace a checkpoint already in --out; with --resume: resume although --data changed since the run started, or its log.jsonl is damaged (kept aside as log.jsonl.damaged, a new log begins)");
  flags->model.add_to(*cmd);
  auto& o = flags->options;
  const CLI::Validator non_negative = number_in(0.0, std::numeric_limits<double>::infinity());
  const CLI::Validator count = integer_in(0, std::numeric_limits<int64_t>::max());
  cmd->add_option("--batch", o.batch, "sequences per step")->check(integer_in(1, train::TrainOptions::kMaxBatch))->capture_default_str();
  cmd->add_option("--grad-accum", o.grad_accum,
                  "split each step's batch into N micro-batches whose gradients are summed "
                  "(token-weighted) before one clip and update: the same step in less memory; "
                  "N must divide --batch")
      ->check(integer_in(1, train::TrainOptions::kMaxBatch))->capture_default_str();
  cmd->add_option("--steps", o.steps, "total optimisation steps")->check(integer_in(1, train::TrainOptions::kMaxSteps))->capture_default_str();
  cmd->add_option("--lr", o.lr, "peak learning rate (the default suits the small default model; use ~1e-3 for larger ones)")->check(positive_number())->capture_default_str();
  cmd->add_option("--min-lr", o.min_lr, "learning rate at the end of the cosine decay (default: --lr / 10)")->check(non_negative);
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
  cmd->add_option("--eval-every", o.eval_every, "evaluate and checkpoint every N steps")->check(integer_in(1, train::TrainOptions::kMaxSteps))->capture_default_str();
  cmd->add_option("--eval-iters", o.eval_iters, "batches per split in an evaluation")->check(integer_in(1, train::TrainOptions::kMaxBatch))->capture_default_str();
  cmd->add_option("--val-fraction", flags->val_fraction, "share of the text held out for validation")->check(number_in(0.0, 0.9))->capture_default_str();
  add_threads_flag(*cmd, flags->threads, "under mpirun, 0 without OMP_NUM_THREADS shares the cores among the ranks");
  cmd->callback([flags, cmd] { run_train(*flags, *cmd); });
}

}  // namespace tinygpt::cli
