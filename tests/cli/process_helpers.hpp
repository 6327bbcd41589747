#pragma once
// What the CLI tests of running commands share: waiting for a background run to reach a point,
// the tiny model trained long enough to be signalled, and a checkpoint's lock held by the test.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_helpers.hpp"

namespace tinygpt::testing {

// Polls `ready` until it holds (true) or kWaitLimit passes (false): often enough that a signal
// lands while the awaited state lasts, and long enough for a tiny run on a loaded CI machine.
inline constexpr std::chrono::milliseconds kPollEvery{10};
inline constexpr std::chrono::seconds kWaitLimit{60};
inline bool wait_until(const std::function<bool()>& ready) {
  const auto until = std::chrono::steady_clock::now() + kWaitLimit;
  while (std::chrono::steady_clock::now() < until) {
    if (ready()) return true;
    std::this_thread::sleep_for(kPollEvery);
  }
  return false;
}

// Lines in `path` (0 if it does not exist).
inline size_t lines_in(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return 0;
  const std::string text = read_bytes(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The tiny model trained for `steps` with the schedule's horizon fixed at `steps`, so that a run
// interrupted and resumed can be compared with one never interrupted.
inline std::vector<std::string> long_run(const std::string& out, int64_t steps, int64_t eval_every) {
  return concat({"train", "--out", out, "--steps", std::to_string(steps), "--eval-every",
                 std::to_string(eval_every), "--lr-decay-steps", std::to_string(steps)},
                tiny_model_flags());
}

// A run of `steps` started in the background, once its log shows a step.
inline void wait_for_first_step(CliProcess& trainer, const std::string& out) {
  const bool stepped = wait_until([&] { return lines_in(out + "/log.jsonl") > 0; });
  if (!stepped) {
    trainer.send_signal(SIGKILL);
    INFO(trainer.finish().describe());
    FAIL("the run logged no step within 60 s");
  }
}

// A flock held by this process on `path` (a checkpoint's folder, or a run's lock file), as a
// stopped trainer (exclusive) or reader (shared) would hold it.
class HeldLock {
 public:
  HeldLock(const std::string& path, int mode) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::flock(fd_, mode) == 0);
  }
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;
  ~HeldLock() { release(); }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// $TINYGPT_LOCK_TIMEOUT for the commands this test starts.
class LockTimeout {
 public:
  explicit LockTimeout(const char* seconds) { ::setenv("TINYGPT_LOCK_TIMEOUT", seconds, 1); }
  ~LockTimeout() { ::unsetenv("TINYGPT_LOCK_TIMEOUT"); }
};

}  // namespace tinygpt::testing
