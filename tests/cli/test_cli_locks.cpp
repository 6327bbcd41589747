// Waiting for a checkpoint's lock never lasts for ever: a command says once that it waits (and
// for whom), honours SIGINT/SIGTERM, and gives up after $TINYGPT_LOCK_TIMEOUT seconds (60 by
// default) with one line; it goes on as soon as the lock is free.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "cli_helpers.hpp"
#include "process_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("sample, eval and heads give up on a folder locked for longer than the timeout, saying so",
          "[cli][hardening][lock]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const LockTimeout timeout("1.5");
  HeldLock saving(run, LOCK_EX);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sample", "--model", run, "--tokens", "5"},
        std::vector<std::string>{"eval", "--model", run, "--threads", "1"},
        std::vector<std::string>{"heads", "--model", run, "--json", "--threads", "1"}}) {
    CAPTURE(args);
    const auto start = std::chrono::steady_clock::now();
    const CliResult r = run_cli(args);
    INFO(r.describe());
    CHECK(r.exited_with(1));
    CHECK(seconds_since(start) < 20.0);
    const std::vector<std::string> lines = r.err_lines();
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "tinygpt: waiting for " + run +
                          ": another tinygpt process is saving or reading it (giving up after 1.5 s)");
    CHECK_THAT(lines[1], Catch::Matchers::StartsWith("tinygpt: error: " + run + " stayed locked for 1.5 s"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("a command waiting for a lock goes on once it is free", "[cli][hardening][lock]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const LockTimeout timeout("60");
  HeldLock saving(run, LOCK_EX);
  // Held long enough that even a slow (sanitized) start meets it and says once that it waits.
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5000));
    saving.release();
  });
  const CliResult r = run_cli({"sample", "--model", run, "--tokens", "5", "--prompt", "a"});
  release.join();
  INFO(r.describe());
  CHECK(r.exited_with(0));
  CHECK(r.out.size() == 1 + 5 + 1);
  CHECK(r.err_lines().size() <= 1);  // the waiting line, at most once
}

TEST_CASE("train --resume waiting for a reader honours SIGTERM and leaves the run as it was",
          "[cli][hardening][lock]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const DirSnapshot before = snapshot(run);
  const LockTimeout timeout("60");
  HeldLock reading(run, LOCK_SH);
  CliProcess trainer({"train", "--resume", run, "--steps", "40", "--threads", "1"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto start = std::chrono::steady_clock::now();
  trainer.send_signal(SIGTERM);
  const CliResult r = trainer.finish();
  INFO(r.describe());
  CHECK(seconds_since(start) < 10.0);
  CHECK(r.exited());
  CHECK(r.exit_code != 0);
  // (The waiting line comes after a second of waiting, which a slow start may not reach.)
  CHECK_THAT(r.err, Catch::Matchers::Contains(run + " was still locked when a signal came"));
  reading.release();
  CHECK(snapshot(run) == before);
}
