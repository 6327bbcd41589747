#include "tinygpt/train/run.hpp"

#include <cmath>
#include <filesystem>

#include "tinygpt/data/data_source.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"

namespace tinygpt::train {
namespace fs = std::filesystem;

namespace {

// Refuses a directory with a checkpoint unless `force`, creates it, and proves it writable, so
// that a run never trains for minutes to find it cannot save.
void prepare_directory(const std::string& dir, bool force) {
  if (has_checkpoint(dir) && !force) {
    throw io::IOError(fmt::format(
        "{} already holds a checkpoint; pass --resume {} to continue it, or --force to replace it",
        dir, dir));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw io::IOError(fmt::format("cannot create output directory {}: {}", dir,
                                  ec ? ec.message() : "not a directory"));
  }
  io::check_writable(dir);
}

}  // namespace

Run::Run(std::string dir, RunState state, data::CharTokenizer tokenizer,
         std::unique_ptr<nn::GPT> model, std::unique_ptr<data::TextDataset> dataset,
         dist::Communicator& world)
    : dir_(std::move(dir)),
      world_(&world),
      state_(std::move(state)),
      tokenizer_(std::move(tokenizer)),
      model_(std::move(model)),
      dataset_(std::move(dataset)),
      trainer_(std::make_unique<Trainer>(*model_, *dataset_, state_.options, world)) {
  state_.ranks = world.size();
}

Run Run::start(const std::string& dir, nn::GPTConfig config, TrainOptions options,
               const std::string& data_source, double val_fraction, bool force,
               dist::Communicator& world) {
  options.validate();
  RunState state;
  state.options = std::move(options);
  state.data_source = data::absolute_source(data_source);
  state.val_fraction = val_fraction;
  state.best_val_loss = NAN;
  const std::string text = data::load_text(state.data_source);
  data::CharTokenizer tokenizer = data::CharTokenizer::fit(text);
  config.vocab_size = tokenizer.vocab_size();
  config.validate();
  auto dataset = std::make_unique<data::TextDataset>(data::make_dataset(
      text, state.data_source, tokenizer, config.block_size, val_fraction));
  auto model = std::make_unique<nn::GPT>(config, state.options.seed);
  Run run(dir, std::move(state), std::move(tokenizer), std::move(model), std::move(dataset),
          world);
  // Every check has passed: only now is the directory created, so a refused run leaves nothing.
  if (world.is_root()) prepare_directory(dir, force);
  return run;
}

Run Run::resume(const std::string& dir, const ResumeChanges& changes, dist::Communicator& world) {
  SavedRun saved = load_run(dir);
  RunState& state = saved.state;
  state.options.steps = changes.steps.value_or(state.options.steps);
  state.options.eval_every = changes.eval_every.value_or(state.options.eval_every);
  state.options.eval_iters = changes.eval_iters.value_or(state.options.eval_iters);
  state.options.validate();
  if (state.options.steps <= state.step) {
    throw ValueError(fmt::format("{} is already at step {}; pass --steps above that to continue",
                                 dir, state.step));
  }
  const std::string text = data::load_text(state.data_source);
  auto dataset = std::make_unique<data::TextDataset>(
      data::make_dataset(text, state.data_source, saved.model.tokenizer,
                         saved.model.config.block_size, state.val_fraction));
  const int64_t step = state.step;
  Run run(dir, std::move(state), std::move(saved.model.tokenizer), std::move(saved.model.model),
          std::move(dataset), world);
  try {
    run.trainer_->optimizer().load_state(saved.optimizer.tensors, step);
  } catch (const Error& e) {
    throw io::FormatError(fmt::format("{}: {}", saved.optimizer.source, e.what()));
  }
  run.trainer_->data_generator().set_state(run.state_.data_rng);
  run.model_->dropout_generator().set_state(run.state_.dropout_rng);
  run.trainer_->set_steps_done(step);
  run.log_ = LossLog::parse(saved.log, step);
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
  if (!std::isnan(e.val_loss) && !(e.val_loss >= state_.best_val_loss)) state_.best_val_loss = e.val_loss;
  return e;
}

void Run::save() {
  state_.options = trainer_->options();
  state_.step = trainer_->steps_done();
  state_.data_rng = trainer_->data_generator().state();
  state_.dropout_rng = model_->dropout_generator().state();
  // The root rank writes; a failure there stops every rank.
  world_->together([&] {
    if (world_->is_root()) {
      save_checkpoint(dir_, *model_, tokenizer_, &trainer_->optimizer(), &state_,
                      {{"log.jsonl", log_.text()}});
    }
  });
}

}  // namespace tinygpt::train
