#include "tinygpt/train/progress.hpp"

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

namespace tinygpt::train {

std::string count_of(int64_t n, const std::string& noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

ProgressReporter::ProgressReporter(int64_t total_steps, std::FILE* out)
    : total_(total_steps),
      out_(out),
      tty_(isatty(fileno(out)) != 0),
      every_(std::max<int64_t>(1, total_steps / 20)) {}

double ProgressReporter::tokens_per_second() const {
  return seconds_ > 0 ? static_cast<double>(tokens_) / seconds_ : 0.0;
}

void ProgressReporter::clear_live_line() {
  if (live_) std::fputs("\r\033[K", out_);
  live_ = false;
}

void ProgressReporter::on_step(const StepStats& s) {
  tokens_ += s.tokens;
  seconds_ += s.seconds;
  smoothed_seconds_ = smoothed_seconds_ == 0.0 ? s.seconds : 0.9 * smoothed_seconds_ + 0.1 * s.seconds;
  const std::string line = fmt::format(
      "step {:>{}}/{}  loss {:.4f}  lr {:.2e}  {:.0f} tok/s  ETA {}", s.step,
      std::to_string(total_).size(), total_, s.loss, s.lr,
      s.seconds > 0 ? static_cast<double>(s.tokens) / s.seconds : 0.0,
      format_duration(smoothed_seconds_ * static_cast<double>(total_ - s.step)));
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s", line.c_str());
    live_ = true;
  } else if (s.step % every_ == 0 || s.step == total_ || s.step == 1) {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void ProgressReporter::on_eval(const EvalStats& e) {
  message(std::isnan(e.val_loss)
              ? fmt::format("eval step {}: train loss {:.4f}", e.step, e.train_loss)
              : fmt::format("eval step {}: train loss {:.4f}, val loss {:.4f}", e.step,
                            e.train_loss, e.val_loss));
}

void ProgressReporter::message(const std::string& line) {
  clear_live_line();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

}  // namespace tinygpt::train
