#pragma once
// A training run and the directory that holds it. The Run owns the model, its tokenizer, the
// data, the trainer (optimiser and data generator) and the loss log, and saves them together as
// one checkpoint (checkpoint.hpp) that a later process resumes exactly:
//
//   Run run = Run::start("runs/x", config, options, "data.txt");  // or data::kToyCorpus
//   fit(run, observers, stop);  // fit.hpp: the loop below, with observers and stop requests
//   // which is:
//   while (!run.done()) {
//     const StepStats s = run.step();
//     if (s.step % run.options().eval_every == 0 || run.done()) {
//       run.evaluate();
//       run.save();
//     }
//   }
//   // later, perhaps in another process and working directory:
//   ResumeChanges more;
//   more.steps = 2 * run.options().steps;
//   Run again = Run::resume("runs/x", more);  // then the same loop
//
// `config` is a GPT's, an encoder-decoder's, or JSON naming a model_type: a model of one's own
// registered with register_causal_lm (task.hpp) trains the same way.
//
// A run saved at step k and resumed ends byte-identical to one never interrupted (with
// lr_decay_steps fixed, when steps grows: the schedule's horizon is otherwise steps).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/io/run_lock.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/loss_log.hpp"
#include "tinygpt/distributed/communicator.hpp"
#include "tinygpt/train/task.hpp"
#include "tinygpt/train/trainer.hpp"

namespace tinygpt::train {

// What a resumed run may change; everything else (model, data, optimiser settings, seed) is the
// run's own.
struct ResumeChanges {
  std::optional<int64_t> steps;       // the new total, above the saved step
  std::optional<int64_t> eval_every;
  std::optional<int64_t> eval_iters;
  // Resume although the data's size or SHA-256 differs from the run's record (the record then
  // takes the new data's).
  bool accept_changed_data = false;
  // The run's text at another path (the project moved): taken when its size and SHA-256 are the
  // recorded ones (or with accept_changed_data), and recorded as the run's source from then on.
  std::optional<std::string> data_source;
  // Resume although log.jsonl is missing or damaged: its bytes are kept aside as
  // log.jsonl.damaged (or .damaged.N), and a new log starts from the resumed step.
  bool accept_damaged_log = false;
  // The products' precision from here on ("f32", "bf16"); the weights are f32 in both.
  std::optional<std::string> precision;
  // A tokenizer asked for again: it must be the run's own (check_same_tokenizer).
  TokenizerChoice tokenizer;
};

// A resume found the run's log.jsonl missing or damaged (weights and optimiser state intact);
// ResumeChanges::accept_damaged_log resumes anyway (the CLI: --force).
class DamagedLogError : public ValueError {
 public:
  using ValueError::ValueError;
};

// A resume, eval or heads found no text where the run recorded it. what() is in library terms;
// source() lets a caller say how to point at the text's new place (the CLI names --data).
class DataMissingError : public ValueError {
 public:
  DataMissingError(std::string source, const Error& why)
      : ValueError("", why), source_(std::move(source)) {}
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

// The text of a run's recorded source; DataMissingError when it cannot be read there.
std::string load_run_text(const RunState& state);

// A resume found the run's data changed since it started. what() is in library terms; the
// fields let a caller say it in its own (the CLI names --data and --force).
class DataChangedError : public ValueError {
 public:
  DataChangedError(std::string source, uint64_t was_bytes, std::string was_sha256,
                   uint64_t now_bytes, std::string now_sha256);
  // "<source> changed since the run started (N bytes, sha256 abcd... -> M bytes, sha256 ...)"
  std::string change() const;

 private:
  std::string source_, was_sha256_, now_sha256_;
  uint64_t was_bytes_, now_bytes_;
};

// A setting the caller chose that cannot work with this run (a total of steps it has already
// reached, a fine-tune into the checkpoint it starts from): the CLI calls it a usage error.
class OptionError : public ValueError {
 public:
  using ValueError::ValueError;
};

inline constexpr const char* kLogFile = "log.jsonl";
inline constexpr const char* kBestDir = "best";  // <dir>/best: the best evaluation's weights

// What `dir` holds besides tinygpt's own lock and staging folder, sorted (empty for a new or
// missing folder): what writing there could overwrite.
std::vector<std::string> foreign_entries(const std::string& dir);
// The first three of `names` and how many more ("a, b, c and 2 more"), for a message.
std::string brief_list(const std::vector<std::string>& names);

// Fine-tuning: a new run whose model starts from a checkpoint's weights (nanoGPT's init_from).
// `dir` holds a GPT (a tinygpt run, a GPT-2 layout: what load_model reads) or an encoder (an
// encoder run, a Hugging Face BertForMaskedLM folder with a tokenizer.json tinygpt reads).
struct InitFrom {
  std::string dir;
  std::optional<double> dropout;  // replaces the checkpoint's (a setting of the training)
  std::optional<double> mask_probability;  // an encoder's: replaces the checkpoint's
};

// What the model in `dir` was trained on (its data source and split): the run state of the run
// in `dir`, or, for the best weights a run keeps in <run>/best, that run's. Empty when neither
// says (a folder of model files alone).
std::optional<RunState> trained_on(const std::string& dir);

class Run {
 public:
  // A new run in `dir` on `data_source` (data/data_source.hpp; a file is stored by its absolute
  // path). `config` picks the model family (task.hpp): a GPT's config, an encoder-decoder's (its
  // text is source<TAB>target pairs, a file or a built-in task of data/pairs.hpp; the last
  // val_fraction of the pairs are held out), or config.json's keys as JSON naming its model_type
  // (a registered model of one's own among them). A tokenizer fitted on the text sets the
  // vocabulary (an encoder-decoder's with <pad>, <s>, </s> first, and its token ids). Every
  // setting is checked (TrainOptions::validate, the config's validate, the data against the
  // context) before anything is written; then `dir` is created. Throws IOError if `dir` already holds a
  // checkpoint, unless `force`; the first save() replaces it.
  // In a data-parallel run every rank starts (or resumes) the same run with its `world`; only
  // the root rank touches the directory, and save() commits there once for all ranks.
  // `tokenizer` replaces the fitted characters for a language model (task.hpp); an
  // encoder-decoder's vocabulary is always its pairs' characters (OptionError otherwise).
  // The root rank holds the directory's run lock (io/run_lock.hpp) from the start (an existing
  // directory is locked before any check) to the Run's end: a second run into it throws IOError
  // "DIR is in use by another training run (pid N)". A run that created the directory and ends
  // before its first save removes it again.
  static Run start(const std::string& dir, const ModelConfig& config, TrainOptions options,
                   const std::string& data_source, double val_fraction = 0.1, bool force = false,
                   distributed::Communicator& world = distributed::world(),
                   const TokenizerChoice& tokenizer = {});
  // A new run (step 0, a new optimiser and schedule) like the one above, but whose model,
  // tokenizer and settings are the checkpoint's in `init.dir`. The text must be written in the
  // checkpoint's characters: the first one it does not know is refused by name (ValueError).
  // The run state records where the weights came from (RunState::init_from). OptionError when
  // `dir` is `init.dir`; a `tokenizer` asked for must be the checkpoint's (check_same_tokenizer).
  static Run start(const std::string& dir, const InitFrom& init, TrainOptions options,
                   const std::string& data_source, double val_fraction = 0.1, bool force = false,
                   distributed::Communicator& world = distributed::world(),
                   const TokenizerChoice& tokenizer = {});
  // The run saved in `dir`, read in one go under the directory's lock (load_run), with its
  // text loaded again from its data source, which must be the text the run started on (its
  // size and SHA-256 as recorded; DataChangedError unless changes.accept_changed_data). Throws
  // OptionError when the run's total of steps (changed or not) is already reached, and the
  // loaders' errors for a missing or damaged file; IOError, before reading anything, when `dir`
  // is not writable or another run holds its lock.
  static Run resume(const std::string& dir, const ResumeChanges& changes = {},
                    distributed::Communicator& world = distributed::world());

  Run(Run&&) = default;
  Run& operator=(Run&&) = delete;
  ~Run();

  bool done() const { return trainer_->done(); }
  // One training step or one evaluation, logged. If it diverges (DivergedError) nothing is
  // written, and the error says which checkpoint the directory keeps.
  StepStats step();
  // Also keeps the best validation loss. `extra_fields` (a JSON object, or empty) adds its fields
  // to the evaluation's log record.
  EvalStats evaluate(const std::string& extra_fields = "");
  // Commits weights, config, tokenizer, optimiser state, run state (step, generator states) and
  // log as one checkpoint.
  // The root rank also writes log.jsonl a line at a time as steps and evaluations are logged
  // (LossLog::write_through): from the start, or, when --force replaces a checkpoint, from the
  // first save (until then the old checkpoint, log included, still loads). Loads read the log as
  // its committed prefix; a resume cuts off the lines logged after the last save.
  void save();

  const std::string& dir() const { return dir_; }
  std::string log_path() const;  // DIR/log.jsonl
  int64_t steps_done() const { return trainer_->steps_done(); }
  int64_t saved_step() const { return state_.step; }  // 0 before the first save
  const TrainOptions& options() const { return trainer_->options(); }
  const std::string& data_source() const { return state_.data_source; }
  double val_fraction() const { return state_.val_fraction; }
  // The source the run had recorded when a resume took its text from another path
  // (ResumeChanges::data_source), else "".
  const std::string& data_moved_from() const { return data_moved_from_; }
  // Where a resume with accept_damaged_log put the damaged log's bytes and why ("" if it did not).
  const std::string& damaged_log_note() const { return damaged_log_note_; }
  double best_val_loss() const { return state_.best_val_loss; }  // NaN before an evaluation
  int64_t best_step() const { return state_.best_step; }        // 0 before an evaluation
  const RunState& state() const { return state_; }  // as of the last save (or the start)
  // From now on (and when resumed), a save after an evaluation that lowered the validation loss
  // also writes the model's files (weights, config, tokenizer) into best_dir(), which sample,
  // eval and heads read like any checkpoint; the run itself resumes from its last step.
  // Turned on when resuming a run that did not keep its best, an earlier best is lost (the
  // weights just loaded are kept if their evaluation was the best).
  void keep_best();
  std::string best_dir() const;  // DIR/best
  // Under mpirun, before the first step: every rank holds the same run (options, model, the
  // text's size and SHA-256, the step resumed from, the weights fine-tuned from), else every rank
  // throws the same distributed::CollectiveError naming the first setting that differs. A
  // collective: every rank calls it once.
  void check_ranks_agree() const;
  bool best_kept() const;        // best_dir() holds the weights of best_step()
  // The model family of the run: its model, tokenizer and data. A caller that needs one family's
  // own model asks for it by type: run.task().as<LanguageModelTask>().gpt().
  Task& task() { return *task_; }
  const Task& task() const { return *task_; }
  const data::Tokenizer& tokenizer() const { return task_->tokenizer(); }
  const LossLog& log() const { return log_; }
  const Trainer& trainer() const { return *trainer_; }

 private:
  Run(std::string dir, RunState state, std::unique_ptr<Task> task, distributed::Communicator& world);
  // The model's files (and the optimiser's and run's state, when given) committed into `to`.
  void commit_model(const std::string& to, const Optimizer* optimizer, const RunState* run,
                    const std::vector<std::pair<std::string, std::string>>& extra_files,
                    const std::string& training_precision);
  // Both starts: a model from `config` and the tokenizer chosen, or `init`'s.
  static Run start_locked(const std::string& dir, ModelConfig config, const InitFrom* init,
                          TrainOptions options, const std::string& data_source,
                          double val_fraction, bool force, distributed::Communicator& world,
                          const TokenizerChoice& tokenizer, std::unique_ptr<io::RunLock>& lock);
  // resume() once `lock` (root rank: the directory's run lock, or null) is held.
  static Run resume_locked(const std::string& dir, const ResumeChanges& changes,
                           distributed::Communicator& world, std::unique_ptr<io::RunLock>& lock);
  // Creates the directory, takes its run lock (or keeps `lock`), refuses a checkpoint there
  // unless `force`, and proves it writable (root rank).
  void claim_directory(std::unique_ptr<io::RunLock> lock, bool force);
  // f(), with a DivergedError's message telling what the directory keeps.
  template <class F>
  auto unless_diverged(F&& f);

  std::string dir_;
  distributed::Communicator* world_;
  RunState state_;  // as of the last save (or the start), apart from best_val_loss
  std::unique_ptr<Task> task_;  // held by pointer: the trainer refers to its model and data
  std::unique_ptr<Trainer> trainer_;
  LossLog log_;
  std::unique_ptr<io::RunLock> lock_;  // root rank: held for the Run's lifetime
  bool created_dir_ = false;           // this run made the directory
  bool best_unsaved_ = false;          // an evaluation lowered the val loss since the last save
  bool stale_best_ = false;
  std::string data_moved_from_;
  std::string damaged_log_note_;            // --force replaces a run whose best/ is still there
};

}  // namespace tinygpt::train
