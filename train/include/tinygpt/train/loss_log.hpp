#pragma once
// A run's loss log, saved as log.jsonl: one JSON object per line, one line per step
//   {"step": 12, "loss": 2.31, "lr": 0.02, "grad_norm": 0.8, "tokens_per_s": 41000.0}
// and one per evaluation
//   {"step": 500, "train_loss": 1.52, "val_loss": 1.57}      (val_loss null without a val split)
// A run writes it a line at a time (write_through); each checkpoint commits its lines so far.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tinygpt/train/log_records.hpp"
#include "tinygpt/train/trainer.hpp"

namespace tinygpt::train {

class LossLog {
 public:
  LossLog() = default;
  LossLog(LossLog&&) = default;
  LossLog& operator=(LossLog&&) = default;

  // The lines of `text` (a log.jsonl) up to and including `step`: what a checkpoint at that step
  // had logged. A resumed run logs the later steps again. Unreadable lines are dropped
  // (LogRecords::parse decides which; `source` names the file in its errors).
  static LossLog parse(const std::string& text, int64_t step, const std::string& source = "log.jsonl");

  void add(const StepStats& s);
  // `extra_fields` (a JSON object, or empty) adds its fields to the evaluation's record, e.g.
  // the head scores of heads::formation_record.
  void add(const EvalStats& e, const std::string& extra_fields = "");
  std::string text() const;  // the log.jsonl bytes
  LogRecords records() const;
  // From now on every line added is also appended to `path` and flushed at once (tail -f shows
  // the run's progress). `path` is first cut to text() if it starts with it, else replaced by
  // it. Throws IOError naming the file when it cannot be opened or written (then and at every
  // line).
  void write_through(const std::string& path);

 private:
  void append(std::string line);

  std::vector<std::string> lines_;
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
};

}  // namespace tinygpt::train
