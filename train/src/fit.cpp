#include "tinygpt/train/fit.hpp"

namespace tinygpt::train {
namespace {

// The observers' fields for an evaluation's record, as one object ("" when none adds any).
std::string eval_fields(Run& run, const std::vector<FitObserver*>& observers) {
  nlohmann::json fields = nlohmann::json::object();
  for (FitObserver* o : observers) {
    const nlohmann::json more = o->eval_fields(run);
    if (more.is_object()) fields.update(more);
  }
  return fields.empty() ? "" : fields.dump();
}

void save(Run& run, const std::vector<FitObserver*>& observers) {
  run.save();
  for (FitObserver* o : observers) o->on_save(run);
}

}  // namespace

FitResult fit(Run& run, const std::vector<FitObserver*>& observers, const StopRequest& stop) {
  const auto stop_requested = [&] { return stop ? stop() : 0; };
  FitResult result;
  result.first_step = run.steps_done();
  if ((result.stopped_by = stop_requested()) != 0) return result;  // before any step: nothing to save
  while (!run.done()) {
    const StepStats s = run.step();
    for (FitObserver* o : observers) o->on_step(run, s);
    const bool evaluating = s.step % run.options().eval_every == 0 || run.done();
    if (evaluating) {
      result.last_eval = run.evaluate(eval_fields(run, observers));
      for (FitObserver* o : observers) o->on_eval(run, *result.last_eval);
      save(run, observers);
    }
    if ((result.stopped_by = stop_requested()) != 0) {
      // The step is finished; its checkpoint (without an evaluation, as the same run never
      // interrupted would have none here) resumes exactly.
      if (!evaluating) save(run, observers);
      result.saved_at_stop = true;
      return result;
    }
  }
  return result;
}

}  // namespace tinygpt::train
