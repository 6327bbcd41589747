#pragma once
// A run's loss log, saved as log.jsonl: one JSON object per line, one line per step
//   {"step": 12, "loss": 2.31, "lr": 0.02, "grad_norm": 0.8, "tokens_per_s": 41000.0}
// and one per evaluation
//   {"step": 500, "train_loss": 1.52, "val_loss": 1.57}      (val_loss null without a val split)
#include <cstdint>
#include <string>
#include <vector>

#include "tinygpt/train/trainer.hpp"

namespace tinygpt::train {

class LossLog {
 public:
  // The lines of `text` (a log.jsonl) up to and including `step`: what a checkpoint at that step
  // had logged. A resumed run logs the later steps again. Unreadable lines are dropped.
  static LossLog parse(const std::string& text, int64_t step);

  void add(const StepStats& s);
  // `extra_fields` (a JSON object, or empty) adds its fields to the evaluation's record, e.g.
  // the head scores of heads::formation_record.
  void add(const EvalStats& e, const std::string& extra_fields = "");
  std::string text() const;  // the log.jsonl bytes
  // The training curve as a PNG: every step's loss, and the evaluations' validation losses.
  void save_curve(const std::string& path, const std::string& title) const;

 private:
  std::vector<std::string> lines_;
};

}  // namespace tinygpt::train
