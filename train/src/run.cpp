#include "tinygpt/train/run.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "finite_values.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/io/run_lock.hpp"
#include "tinygpt/io/sha256.hpp"
#include "tinygpt/train/memory_estimate.hpp"

namespace tinygpt::train {
namespace fs = std::filesystem;

namespace {

// The lock of an existing directory, taken before anything else so that a second run into a
// folder in use fails at once (root rank only; the other ranks never touch the directory).
std::unique_ptr<io::RunLock> lock_if_exists(const std::string& dir, const distributed::Communicator& world) {
  if (!world.is_root() || io::file_type_of(dir, "run directory") != fs::file_type::directory) return nullptr;
  return std::make_unique<io::RunLock>(dir);
}

// "<source> changed since the run started (N bytes, sha256 <first 12 digits>... -> ...)".
std::string describe_change(const std::string& source, uint64_t was_bytes,
                            const std::string& was_sha256, uint64_t now_bytes,
                            const std::string& now_sha256) {
  return fmt::format(
      "{} changed since the run started ({} bytes, sha256 {}... -> {} bytes, sha256 {}...)",
      source, was_bytes, was_sha256.substr(0, 12), now_bytes, now_sha256.substr(0, 12));
}

// f(lock), with the run lock of `dir` taken when it exists (lock_if_exists); a lock file this
// call created goes again if f throws: a refused start or resume adds none.
template <class F>
Run with_run_lock(const std::string& dir, const distributed::Communicator& world, F&& f) {
  std::unique_ptr<io::RunLock> lock = lock_if_exists(dir, world);
  try {
    return f(lock);
  } catch (...) {
    if (lock && lock->created()) lock->remove();
    throw;
  }
}

// Before a run trains, what is in the way of its saves. A symbolic link where it writes in place
// (the log, the best weights) or where the commit protocol moves files would redirect writes
// outside the folder; a folder where a checkpoint file goes would fail the first save.
void check_save_paths(const std::string& dir) {
  const auto in = [&](const std::string& name) { return (fs::path(dir) / name).string(); };
  for (const char* name : {kLogFile, io::kStagingDir, io::kCommitRecord}) io::refuse_symlink(in(name));
  for (const std::string& name : checkpoint_file_names()) {
    io::refuse_in_the_way(in(name), io::EntryKind::file, "a checkpoint file");
  }
  io::refuse_in_the_way(in(kBestDir), io::EntryKind::folder, "the best checkpoint");
}

// What the run's task is built on: its text, split, options and the rows of one micro-batch.
TaskSource task_source(const std::string& text, const RunState& state,
                       const distributed::Communicator& world) {
  const int64_t parts = world.size() * state.options.grad_accum;
  return {text, state.data_source, state.val_fraction, state.options,
          (state.options.batch + parts - 1) / parts};
}

// Where a new run may write, checked before anything is read or written: a new or empty folder,
// a tinygpt run (replaced with `force`), or with `force` any folder; and never where the text it
// trains on lives, which --force could overwrite.
void check_out_folder(const std::string& dir, const std::string& data_source, bool force) {
  std::error_code ec;
  if (fs::is_regular_file(data_source, ec)) {
    const fs::path text = fs::weakly_canonical(data_source, ec);
    const fs::path inside = text.lexically_relative(fs::weakly_canonical(dir, ec));
    if (!inside.empty() && *inside.begin() != "..") {
      throw OptionError(fmt::format("the text {} is inside the output folder {}, where a run "
                                    "writes its files; move it, or name another folder", data_source, dir));
    }
  }
  if (force || has_checkpoint(dir)) return;  // a checkpoint: refused by claim_directory
  const std::vector<std::string> names = foreign_entries(dir);
  if (names.empty()) return;
  throw io::IOError({fmt::format("{} is not empty ({}) and holds no tinygpt run; a run writes into "
                                 "a new or empty folder: name another, or pass ", dir, brief_list(names)),
                     MessagePart("force", ""), " to write into this one"});
}

}  // namespace

std::vector<std::string> foreign_entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name != io::kRunLockFile && name != io::kStagingDir) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string brief_list(const std::vector<std::string>& names) {
  std::string listed;
  for (size_t i = 0; i < std::min<size_t>(names.size(), 3); ++i) listed += (i ? ", " : "") + names[i];
  if (names.size() > 3) listed += fmt::format(" and {} more", names.size() - 3);
  return listed;
}

DataChangedError::DataChangedError(std::string source, uint64_t was_bytes, std::string was_sha256,
                                   uint64_t now_bytes, std::string now_sha256)
    : ValueError(describe_change(source, was_bytes, was_sha256, now_bytes, now_sha256) +
                 "; resume with accept_changed_data to train on it anyway"),
      source_(std::move(source)),
      was_sha256_(std::move(was_sha256)),
      now_sha256_(std::move(now_sha256)),
      was_bytes_(was_bytes),
      now_bytes_(now_bytes) {}

std::string DataChangedError::change() const {
  return describe_change(source_, was_bytes_, was_sha256_, now_bytes_, now_sha256_);
}

std::string load_run_text(const RunState& state) {
  try {
    return data::load_text(state.data_source);
  } catch (const ValueError& e) {
    throw DataMissingError(state.data_source, e);
  }
}

std::optional<RunState> trained_on(const std::string& dir) {
  const auto has_state = [](const fs::path& run) {
    return io::CommittedFiles(run.string()).contains(kTrainerStateFile);
  };
  if (io::file_type_of(dir, "model directory") != fs::file_type::directory) return std::nullopt;
  if (has_state(dir)) return load_run_state(dir);
  fs::path best = fs::absolute(dir).lexically_normal();
  if (best.filename().empty()) best = best.parent_path();  // "run/best/"
  const fs::path run = best.parent_path();
  if (best.filename() == kBestDir && has_state(run)) {
    RunState state = load_run_state(run.string());
    if (state.keep_best) return state;
  }
  return std::nullopt;
}

Run::Run(std::string dir, RunState state, std::unique_ptr<Task> task, distributed::Communicator& world)
    : dir_(std::move(dir)),
      world_(&world),
      state_(std::move(state)),
      task_(std::move(task)),
      trainer_(std::make_unique<Trainer>(task_->make_objective(), state_.options, world)) {
  state_.ranks = world.size();
}

void Run::commit_model(const std::string& to, const Optimizer* optimizer, const RunState* run,
                       const std::vector<std::pair<std::string, std::string>>& extra_files,
                       const std::string& training_precision) {
  save_checkpoint(to, task_->checkpoint_tensors(),
                  task_->config_json(run != nullptr ? run->options.precision : training_precision),
                  task_->tokenizer(), optimizer, run, extra_files);
}

Run::~Run() {
  // A run that stops before its first save (refused, diverged, out of memory) leaves nothing:
  // no lock file it created, and no folder it created.
  if (!lock_ || has_checkpoint(dir_)) return;
  if (!created_dir_) {
    if (lock_->created()) lock_->remove();
    return;
  }
  std::error_code ec;
  fs::remove(log_path(), ec);
  lock_->remove();
  fs::remove(dir_, ec);  // only if empty: a file of anyone else's stays
}

std::string Run::log_path() const { return (fs::path(dir_) / kLogFile).string(); }

std::string Run::best_dir() const { return (fs::path(dir_) / kBestDir).string(); }

void Run::keep_best() {
  if (state_.keep_best) return;
  state_.keep_best = true;
  // Resuming a run whose last evaluation was its best: those are the weights just loaded. An
  // earlier best is gone; the next evaluation below it is kept.
  if (state_.step > 0 && state_.best_step == state_.step) {
    world_->together([&] {
      if (world_->is_root()) commit_model(best_dir(), nullptr, nullptr, {}, state_.options.precision);
    });
  }
}

void Run::check_ranks_agree() const {
  if (world_->size() == 1) return;
  std::vector<std::pair<std::string, std::string>> fields;
  const std::string config = task_->config_json("");
  for (const std::string& settings : {options_to_json(state_.options), config}) {
    const nlohmann::json object = nlohmann::json::parse(settings);
    for (const auto& [key, value] : object.items()) fields.emplace_back(key, value.dump());
  }
  fields.emplace_back("text (its size and SHA-256)", fmt::format("{} {}", state_.data_bytes, state_.data_sha256));
  fields.emplace_back("val_fraction", fmt::format("{}", state_.val_fraction));
  fields.emplace_back("step resumed from", std::to_string(state_.step));
  fields.emplace_back("weights fine-tuned from", state_.init_from_sha256);
  // Each value's 64-bit FNV-1a hash in four 16-bit pieces, summed with their squares over the
  // ranks (exact in doubles): the pieces agree on every rank iff sum^2 == ranks * sum of squares.
  std::vector<double> sums(fields.size() * 8);
  for (size_t i = 0; i < fields.size(); ++i) {
    uint64_t hash = 1469598103934665603ull;
    for (const unsigned char c : fields[i].second) hash = (hash ^ c) * 1099511628211ull;
    for (int piece = 0; piece < 4; ++piece) {
      const double x = static_cast<double>((hash >> (16 * piece)) & 0xFFFF);
      sums[8 * i + piece] = x;
      sums[8 * i + 4 + piece] = x * x;
    }
  }
  world_->allreduce_sum(sums.data(), static_cast<int64_t>(sums.size()));
  for (size_t i = 0; i < fields.size(); ++i) {
    for (int piece = 0; piece < 4; ++piece) {
      const double sum = sums[8 * i + piece], squares = sums[8 * i + 4 + piece];
      if (sum * sum != world_->size() * squares) {
        throw distributed::CollectiveError(fmt::format(
            "the {} ranks were started on different runs: their {} differs; every rank of an mpirun "
            "must run the same command on the same text", world_->size(), fields[i].first));
      }
    }
  }
}

bool Run::best_kept() const { return state_.keep_best && has_checkpoint(best_dir()); }

void Run::claim_directory(std::unique_ptr<io::RunLock> lock, bool force) {
  created_dir_ = io::create_directory(dir_, "output directory");
  lock_ = lock ? std::move(lock) : std::make_unique<io::RunLock>(dir_);
  check_save_paths(dir_);
  const bool replacing = has_checkpoint(dir_);
  if (replacing && !force) {
    throw io::IOError({dir_ + " already holds a checkpoint; pass ", MessagePart("resume", dir_),
                       " to continue it, or ", MessagePart("force", ""), " to replace it"});
  }
  // Proves the directory writable, so that a run never trains for minutes to find it cannot save.
  io::check_writable(dir_);
  // A save the replaced run left half done is completed (or its damaged record refused) now,
  // not by this run's first save after it has trained.
  if (replacing) recover_checkpoint(dir_);
  // The log goes out a line at a time from the start into a folder that held nothing; else from
  // the first save, so that a run stopped before it leaves the folder's files (a checkpoint that
  // still loads, or what --force was given for) as they were.
  if (!replacing && foreign_entries(dir_).empty()) log_.write_through(log_path());
  // The replaced run's best weights are not this run's: gone at the first save.
  stale_best_ = replacing && has_checkpoint(best_dir());
}

Run Run::start(const std::string& dir, const ModelConfig& config, TrainOptions options,
               const std::string& data_source, double val_fraction, bool force,
               distributed::Communicator& world, const TokenizerChoice& tokenizer) {
  return with_run_lock(dir, world, [&](std::unique_ptr<io::RunLock>& lock) {
    return start_locked(dir, config, nullptr, std::move(options), data_source,
                        val_fraction, force, world, tokenizer, lock);
  });
}

Run Run::start(const std::string& dir, const InitFrom& init, TrainOptions options,
               const std::string& data_source, double val_fraction, bool force,
               distributed::Communicator& world, const TokenizerChoice& tokenizer) {
  return with_run_lock(dir, world, [&](std::unique_ptr<io::RunLock>& lock) {
    return start_locked(dir, nn::GPTConfig{}, &init, std::move(options), data_source, val_fraction, force,
                        world, tokenizer, lock);
  });
}

namespace {

// A new run's state and its text, once the options and the output folder are checked.
std::pair<RunState, std::string> new_run_state(const std::string& dir, TrainOptions options,
                                               const std::string& data_source, double val_fraction,
                                               bool force, const distributed::Communicator& world) {
  options.validate();
  RunState state;
  state.options = std::move(options);
  state.data_source = data::absolute_source(data_source);
  if (world.is_root()) check_out_folder(dir, state.data_source, force);
  state.val_fraction = val_fraction;
  state.best_val_loss = NAN;
  std::string text = data::load_text(state.data_source);
  state.data_bytes = text.size();
  state.data_sha256 = io::sha256_hex(text);
  return {std::move(state), std::move(text)};
}

// What a fine-tuned run starts from: the model `init.dir` holds (a GPT or an encoder), with the
// settings of training `init` replaces, its tokenizer and its weights.
struct FineTuneStart {
  ModelConfig config;
  data::TokenizerPtr tokenizer;
  nn::NamedTensors weights;
  std::string weights_sha256;
};

FineTuneStart fine_tune_start(const InitFrom& init) {
  if (model_kind(init.dir) != std::optional<std::string>("encoder")) {
    LoadedModel gpt = load_model(init.dir);
    nn::GPTConfig config = gpt.config;
    if (init.dropout) config.dropout = *init.dropout;
    return {config, gpt.tokenizer, gpt.model->state_dict(), gpt.weights_sha256};
  }
  LoadedTask loaded = load_task_to_fine_tune(init.dir);
  EncoderTask& encoder = loaded.task->as<EncoderTask>();
  EncoderConfig config{encoder.bert().config(), init.mask_probability.value_or(encoder.mask_probability())};
  if (init.dropout) config.model.hidden_dropout_prob = config.model.attention_probs_dropout_prob = *init.dropout;
  return {config, encoder.shared_tokenizer(), encoder.model().state_dict(), loaded.weights_sha256};
}

// The tokenizer that refuses a character outside the vocabulary: a masked LM's reads one as [UNK],
// but a fine-tuned model must know its text's characters, an encoder's as a language model's.
const data::Tokenizer& known_characters(const data::Tokenizer& tokenizer) {
  const auto* masked_lm = dynamic_cast<const data::MaskedLMTokenizer*>(&tokenizer);
  return masked_lm != nullptr ? masked_lm->characters() : tokenizer;
}

}  // namespace

Run Run::start_locked(const std::string& dir, ModelConfig config, const InitFrom* init,
                      TrainOptions options, const std::string& data_source, double val_fraction,
                      bool force, distributed::Communicator& world,
                      const TokenizerChoice& tokenizer, std::unique_ptr<io::RunLock>& lock) {
  if (!tokenizer.is_default() && std::holds_alternative<nn::EncoderDecoderConfig>(config)) {
    throw OptionError("an encoder-decoder's vocabulary is the characters of its pairs; it takes no other tokenizer");
  }
  auto [state, text] = new_run_state(dir, std::move(options), data_source, val_fraction, force, world);
  data::TokenizerPtr chosen = chosen_tokenizer(tokenizer, text, val_fraction);
  std::optional<FineTuneStart> loaded;
  if (init != nullptr) {
    std::error_code ec;
    if (fs::equivalent(dir, init->dir, ec)) {
      throw OptionError(fmt::format("{} is the checkpoint to start from; the new run needs "
                                   "another directory", dir));
    }
    loaded = fine_tune_start(*init);
    if (chosen) check_same_tokenizer(*loaded->tokenizer, *chosen, init->dir);
    chosen = loaded->tokenizer;
    try {
      known_characters(*loaded->tokenizer).encode(text);
    } catch (const ValueError& e) {
      throw ValueError(state.data_source + ": ", e,
                       fmt::format("; a fine-tuned model keeps the vocabulary of {}", init->dir));
    }
    config = loaded->config;
    state.init_from = fs::absolute(init->dir).lexically_normal().string();
    state.init_from_sha256 = loaded->weights_sha256;
    if (has_checkpoint(init->dir) && fs::exists(fs::path(init->dir) / kTrainerStateFile, ec)) {
      state.init_from_step = load_run_state(init->dir).step;
    }
  }
  std::unique_ptr<Task> task = new_task(config, task_source(text, state, world), chosen);
  // A fine-tuned model takes the checkpoint's weights; the seed still drives batches and dropout.
  if (loaded) task->model().load_state_dict(loaded->weights);
  Run run(dir, std::move(state), std::move(task), world);
  // Every check has passed: only now is the directory created, so a refused run leaves nothing.
  if (world.is_root()) run.claim_directory(std::move(lock), force);
  return run;
}

Run Run::resume(const std::string& dir, const ResumeChanges& changes, distributed::Communicator& world) {
  // Before anything is read or trained: a run that cannot save, or whose folder another run is
  // using, fails at once.
  if (world.is_root() && io::file_type_of(dir, "run directory") == fs::file_type::directory) {
    io::check_writable(dir);
  }
  return with_run_lock(dir, world, [&](std::unique_ptr<io::RunLock>& lock) {
    return resume_locked(dir, changes, world, lock);
  });
}

Run Run::resume_locked(const std::string& dir, const ResumeChanges& changes,
                       distributed::Communicator& world, std::unique_ptr<io::RunLock>& lock) {
  if (lock) check_save_paths(dir);
  if (lock) recover_checkpoint(dir);  // a save cut short is completed or dropped: files in place
  SavedRun saved = load_run(dir, /*tolerate_damaged_log=*/true);
  if (!saved.log_damage.empty() && !changes.accept_damaged_log) throw DamagedLogError(saved.log_damage);
  RunState& state = saved.state;
  state.options.steps = changes.steps.value_or(state.options.steps);
  state.options.eval_every = changes.eval_every.value_or(state.options.eval_every);
  state.options.eval_iters = changes.eval_iters.value_or(state.options.eval_iters);
  state.options.precision = changes.precision.value_or(state.options.precision);
  state.options.validate();
  if (state.options.steps <= state.step) {
    throw OptionError({fmt::format("{} is already at step {}; pass ", dir, state.step),
                       MessagePart("steps", ""), " above that to continue"});
  }
  std::string moved_from;
  if (changes.data_source && !data::same_source(*changes.data_source, state.data_source)) {
    moved_from = state.data_source;
    state.data_source = data::absolute_source(*changes.data_source);  // checked by its bytes below
  }
  const std::string text = load_run_text(state);
  const std::string sha256 = io::sha256_hex(text);
  if (state.text_differs(text.size(), sha256) && !changes.accept_changed_data) {
    throw DataChangedError(state.data_source, state.data_bytes, state.data_sha256, text.size(), sha256);
  }
  state.data_bytes = text.size();  // runs saved without the record get it now
  state.data_sha256 = sha256;
  if (const data::TokenizerPtr asked = chosen_tokenizer(changes.tokenizer, text, state.val_fraction)) {
    check_same_tokenizer(saved.task->tokenizer(), *asked, dir);
  }
  const int64_t step = state.step;
  std::unique_ptr<Task> task = std::move(saved.task);
  task->set_data(task_source(text, state, world));
  Run run(dir, std::move(state), std::move(task), world);
  try {
    run.trainer_->optimizer().load_state(saved.optimizer.tensors, step);
  } catch (const Error& e) {
    throw io::FormatError(saved.optimizer.source + ": ", e);
  }
  run.trainer_->data_generator().set_state(run.state_.data_rng);
  run.trainer_->objective().dropout_generator().set_state(run.state_.dropout_rng);
  run.trainer_->set_steps_done(step);
  run.log_ = LossLog::parse(saved.log, step, (fs::path(dir) / kLogFile).string());
  run.data_moved_from_ = moved_from;
  if (!saved.log_damage.empty() && lock) {
    // The damaged bytes are the user's record of the run: kept aside, never deleted.
    const fs::path log = run.log_path();
    fs::path aside = log.string() + ".damaged";
    std::error_code ec;
    for (int n = 1; fs::exists(fs::symlink_status(aside, ec)); ++n) {
      aside = log.string() + ".damaged." + std::to_string(n);
    }
    const bool kept = fs::exists(log, ec);
    if (kept) fs::rename(log, aside, ec);
    if (ec) {
      throw io::IOError(fmt::format("{}; cannot keep its bytes in {}: {}", saved.log_damage,
                                    aside.string(), ec.message()));
    }
    run.damaged_log_note_ =
        saved.log_damage + (kept ? fmt::format("; its bytes are kept in {}", aside.string()) : "") +
        fmt::format("; a new log starts at step {}", step);
  }
  // Lines logged after the last save are cut off, and the log goes on a line at a time; if the
  // committed log held lines the run does not keep, it is replaced at the first save instead.
  if (lock && run.log_.text() == saved.log) run.log_.write_through(run.log_path());
  run.lock_ = std::move(lock);
  return run;
}

template <class F>
auto Run::unless_diverged(F&& f) {
  try {
    return f();
  } catch (const DivergedError& e) {
    throw DivergedError(
        state_.step > 0
            ? fmt::format("{}; stopped. The last good checkpoint (step {}) is kept in {}",
                          e.what(), state_.step, dir_)
            : fmt::format("{}; stopped before the run's first checkpoint: it saved nothing in {}",
                          e.what(), dir_));
  }
}

StepStats Run::step() {
  const StepStats s = unless_diverged([&] { return trainer_->step(); });
  log_.add(s);
  return s;
}

EvalStats Run::evaluate(const std::string& extra_fields) {
  const EvalStats e = unless_diverged([&] { return trainer_->evaluate(); });
  log_.add(e, extra_fields);
  if (!std::isnan(e.val_loss) && !(e.val_loss >= state_.best_val_loss)) {
    state_.best_val_loss = e.val_loss;
    state_.best_step = e.step;
    best_unsaved_ = true;
  }
  return e;
}

void Run::save() {
  // A step can keep its loss and gradient norm finite and still overflow the optimizer's state
  // (a gradient element's square beyond float): such a checkpoint would not load, so the run
  // stops as diverged, keeping the last one that does.
  unless_diverged([&] {
    Trainer& trainer = *trainer_;
    for (const auto& [kind, tensors] :
         {std::pair<const char*, nn::NamedTensors>{"weight", trainer.objective().model().named_parameters()},
          {"optimizer state", trainer.optimizer().state()}}) {
      if (const std::optional<NonFinite> bad = first_non_finite(tensors)) {
        throw DivergedError(fmt::format("training diverged: {} '{}' is {} after step {}", kind,
                                        bad->name, bad->value, trainer.steps_done()));
      }
    }
  });
  const int64_t kept_step = state_.step;  // what a failed save leaves on disk (0: nothing)
  state_.options = trainer_->options();
  state_.step = trainer_->steps_done();
  state_.data_rng = trainer_->data_generator().state();
  state_.dropout_rng = trainer_->objective().dropout_generator().state();
  // The root rank writes; a failure there stops every rank.
  world_->together([&] {
    if (!world_->is_root()) return;
    try {
      // The best weights first: the run's own record never names a best save that did not happen.
      if (state_.keep_best && best_unsaved_) {
        commit_model(best_dir(), nullptr, nullptr, {}, state_.options.precision);
      } else if (stale_best_) {
        io::remove_all(best_dir(), "the stale best checkpoint");
      }
      commit_model(dir_, &trainer_->optimizer(), &state_, {{kLogFile, log_.text()}}, "");
      log_.write_through(log_path());  // the file committed (in place, or new after --force)
    } catch (const io::IOError& e) {  // a full disk, say: what the user has is named
      throw io::IOError(fmt::format("saving step {} failed: ", state_.step), e,
                        kept_step > 0
                            ? fmt::format("; the checkpoint of step {} in {} is intact", kept_step, dir_)
                            : fmt::format("; the run saved nothing in {}", dir_));
    }
  });
  best_unsaved_ = false;
  stale_best_ = false;
}

}  // namespace tinygpt::train
