#pragma once
// log.jsonl read back: the one reader of a run's loss log (LossLog writes it). Every consumer —
// resume, the loss curve, heads over time, the explorer page — takes its records from here.
//   step records        {"step", "loss", "lr", "grad_norm", "tokens_per_s"}
//   evaluation records  {"step", "train_loss", "val_loss" (null without a validation split),
//                        and, when training tracked the heads, "heads" and "in_context"; an
//                        encoder-decoder's "exact_match", "char_accuracy", "pairs" and
//                        "cross_attention" (each head's alignment)}
// A line that is not a JSON object with a numeric "step" is skipped: a log is a record of the run
// (it may end in a line cut short by a crash), not an input to trust. A record whose fields have
// the wrong types (a hand-edited log) is refused: ValueError "<source> line N: field 'heads[2].layer'
// is string, not an integer".
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tinygpt::train {

struct LogPoint {
  double step = 0.0;
  double value = 0.0;
};

class LogRecords {
 public:
  // The records of log.jsonl bytes, those after `last_step` left out.
  static LogRecords parse(const std::string& text, int64_t last_step = INT64_MAX,
                          const std::string& source = "log.jsonl");
  // The records of the file at `path` (none when it does not exist).
  static LogRecords read(const std::string& path);

  const std::vector<nlohmann::json>& records() const { return records_; }
  // Each kept record's line as it was in the file (resume writes them back byte for byte).
  const std::vector<std::string>& lines() const { return lines_; }

  std::vector<LogPoint> step_losses() const;        // "loss" of step records
  std::vector<LogPoint> eval_train_losses() const;  // "train_loss" of evaluations
  std::vector<LogPoint> val_losses() const;         // "val_loss" of evaluations that have one
  // The evaluation records that carry head scores ("heads" is an array), in step order.
  std::vector<nlohmann::json> head_records() const;
  // The numeric field `key` of every record that has one (an encoder-decoder's "exact_match").
  std::vector<LogPoint> series(const char* key) const;

 private:

  std::vector<nlohmann::json> records_;
  std::vector<std::string> lines_;
};

}  // namespace tinygpt::train
