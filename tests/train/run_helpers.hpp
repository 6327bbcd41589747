#pragma once
// What the Run tests share.
#include "tinygpt/train/run.hpp"

namespace tinygpt::testing {

// Steps `run` to its end, evaluating and saving every eval_every steps and at the end.
inline void train_to_end(train::Run& run) {
  while (!run.done()) {
    const train::StepStats s = run.step();
    if (s.step % run.options().eval_every == 0 || run.done()) {
      run.evaluate();
      run.save();
    }
  }
}

}  // namespace tinygpt::testing
