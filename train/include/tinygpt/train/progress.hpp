#pragma once
// Training progress for people: on a terminal one live line rewritten in place (step/total,
// loss, lr, tokens/s, ETA); in a log (not a TTY) plain lines every `every` steps.
#include <cstdio>
#include <string>

#include "tinygpt/train/trainer.hpp"

namespace tinygpt::train {

class ProgressReporter {
 public:
  ProgressReporter(int64_t total_steps, std::FILE* out = stderr);
  void on_step(const StepStats& s);
  void on_eval(const EvalStats& e);
  // Plain message lines that must not collide with the live line.
  void message(const std::string& line);
  double tokens_per_second() const;

 private:
  void clear_live_line();

  int64_t total_;
  std::FILE* out_;
  bool tty_;
  int64_t every_;
  double smoothed_seconds_ = 0.0;  // exponential average of step time
  int64_t tokens_ = 0;
  double seconds_ = 0.0;
  bool live_ = false;
};

std::string format_duration(double seconds);  // "1m05s", "42s", "1h02m"
// "1 layer", "2 layers": a count and its noun, plural unless the count is one.
std::string count_of(int64_t n, const std::string& noun);

}  // namespace tinygpt::train
