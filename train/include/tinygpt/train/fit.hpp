#pragma once
// The training loop of a Run: steps to the end, an evaluation every eval_every steps and at the
// last, a save after each evaluation, and a stop when asked (with a checkpoint that resumes
// exactly). What else happens at those moments plugs in as observers: a progress line, the
// fields an evaluation's log record carries (the heads' formation), the pictures
// (analysis/run_report.hpp) -- so this loop knows nothing of signals or pictures.
//
//   Run run = Run::start("runs/x", config, options, data::kToyCorpus);  // or Run::resume
//   ProgressObserver progress(...);                 // any FitObserver
//   const FitResult r = fit(run, {&progress}, [&] { return stop_requested; });
//   if (r.stopped_by != 0) { /* saved at r.stopped_at; Run::resume continues it */ }
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/train/progress.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::train {

class FitObserver {
 public:
  virtual ~FitObserver() = default;
  virtual void on_step(Run& /*run*/, const StepStats& /*step*/) {}
  // Fields the evaluation about to run adds to its log record (a JSON object; null for none).
  virtual nlohmann::json eval_fields(Run& /*run*/) { return nullptr; }
  virtual void on_eval(Run& /*run*/, const EvalStats& /*eval*/) {}
  virtual void on_save(Run& /*run*/) {}
};

// Asked before the first step and after every step: nonzero (e.g. the signal's number) stops
// the run there. Under mpirun every rank must return the same answer.
using StopRequest = std::function<int()>;

struct FitResult {
  int64_t first_step = 0;              // the step the run started or resumed from
  std::optional<EvalStats> last_eval;  // the last evaluation of this fit, if any
  int stopped_by = 0;                  // StopRequest's answer when it stopped the run, else 0
  bool saved_at_stop = false;          // a stop after the first step: the checkpoint is saved
};

// The progress line (progress.hpp) of each step and evaluation.
class ProgressObserver : public FitObserver {
 public:
  explicit ProgressObserver(ProgressReporter& progress) : progress_(progress) {}
  void on_step(Run&, const StepStats& step) override { progress_.on_step(step); }
  void on_eval(Run&, const EvalStats& eval) override { progress_.on_eval(eval); }

 private:
  ProgressReporter& progress_;
};

FitResult fit(Run& run, const std::vector<FitObserver*>& observers, const StopRequest& stop = {});

}  // namespace tinygpt::train
