// SIGINT/SIGTERM/SIGHUP during `tinygpt train`: the handler only records the signal; the training
// loop asks after each step, saves and exits 130/143/129 (train_command.cpp).
#include <csignal>
#include <ctime>
#include <iterator>
#include <tuple>

#include "commands.hpp"
#include "tinygpt/analysis/heatmap_set.hpp"
#include "tinygpt/io/commit.hpp"

namespace tinygpt::cli {
namespace {

// In the order agreed() prefers them when ranks saw different ones. A closed terminal (SIGHUP)
// is as much a request to stop as kill's SIGTERM: the step's work is saved.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

volatile std::sig_atomic_t g_stop_signal = 0;
timespec g_first_signal_at{};  // read and written by the handler alone, which never nests

// Copies of the stop signal this soon after it are the same request: `timeout` sends SIGTERM to
// the process and again to its group, a shell's kill of a job may do likewise.
constexpr double kSameRequestSeconds = 1.0;

void set_disposition(int sig, void (*handler)(int), struct sigaction* old = nullptr) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  for (const int stop : kStopSignals) sigaddset(&action.sa_mask, stop);
  action.sa_flags = SA_RESTART;  // reads and writes in flight carry on
  sigaction(sig, &action, old);
}

// Async-signal-safe (clock_gettime, sigaction, raise). The first signal is recorded for the
// training loop; a second one ends the process at once, without waiting for the save, unless it
// is the same signal within kSameRequestSeconds.
extern "C" void on_stop_signal(int sig) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (g_stop_signal == 0) {
    g_stop_signal = sig;
    g_first_signal_at = now;
    return;
  }
  const double since = static_cast<double>(now.tv_sec - g_first_signal_at.tv_sec) +
                       1e-9 * static_cast<double>(now.tv_nsec - g_first_signal_at.tv_nsec);
  if (sig == g_stop_signal && since < kSameRequestSeconds) return;
  set_disposition(sig, SIG_DFL);
  raise(sig);  // delivered as the handler returns: the default action, death by this signal
}

}  // namespace

StopSignals::StopSignals() {
  g_stop_signal = 0;
  io::set_wait_interrupt(&g_stop_signal);  // a signal ends a wait for a checkpoint's lock too
  static_assert(std::size(kStopSignals) == std::tuple_size<decltype(old_)>::value);
  for (size_t i = 0; i < old_.size(); ++i) set_disposition(kStopSignals[i], on_stop_signal, &old_[i]);
}

StopSignals::~StopSignals() { restore(); }

void StopSignals::restore() {
  if (restored_) return;
  restored_ = true;
  io::set_wait_interrupt(nullptr);
  for (size_t i = 0; i < old_.size(); ++i) sigaction(kStopSignals[i], &old_[i], nullptr);
}

int StopSignals::agreed(distributed::Communicator& world) const {
  // Whether each stop signal was seen, summed over the ranks: every rank stops at the same step.
  double seen[std::size(kStopSignals)] = {};
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    seen[i] = g_stop_signal == kStopSignals[i] ? 1.0 : 0.0;
  }
  world.allreduce_sum(seen, std::size(kStopSignals));
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    if (seen[i] > 0.0) return kStopSignals[i];
  }
  return 0;
}

int draw_unless_stopped(const std::function<void()>& draw) {
  const StopSignals stop_signals;
  try {
    draw();
  } catch (const analysis::DrawingInterrupted& e) {
    return e.signal();
  }
  return 0;
}

}  // namespace tinygpt::cli
