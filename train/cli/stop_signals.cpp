// SIGINT/SIGTERM during `tinygpt train`: the handler only records the signal; the training loop
// asks after each step, saves and exits 130/143 (train_command.cpp).
#include <csignal>

#include "commands.hpp"

namespace tinygpt::cli {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void set_disposition(int sig, void (*handler)(int), struct sigaction* old = nullptr) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in flight carry on
  sigaction(sig, &action, old);
}

// Async-signal-safe: one store and two sigaction calls. The default disposition comes back at
// once, so a second SIGINT or SIGTERM ends the process without waiting for the save.
extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  set_disposition(SIGINT, SIG_DFL);
  set_disposition(SIGTERM, SIG_DFL);
}

}  // namespace

StopSignals::StopSignals() {
  g_stop_signal = 0;
  set_disposition(SIGINT, on_stop_signal, &old_int_);
  set_disposition(SIGTERM, on_stop_signal, &old_term_);
}

StopSignals::~StopSignals() { restore(); }

void StopSignals::restore() {
  if (restored_) return;
  restored_ = true;
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int StopSignals::agreed(distributed::Communicator& world) const {
  // {SIGINT seen, SIGTERM seen}, summed over the ranks: every rank stops at the same step.
  double seen[2] = {g_stop_signal == SIGINT ? 1.0 : 0.0, g_stop_signal == SIGTERM ? 1.0 : 0.0};
  world.allreduce_sum(seen, 2);
  return seen[0] > 0.0 ? SIGINT : seen[1] > 0.0 ? SIGTERM : 0;
}

}  // namespace tinygpt::cli
