// The process around a command (issue 57): every write to standard output that fails is an
// error (a full device, a closed descriptor), a closed pipe ends the program quietly, the text
// printed holds every byte the model made; the environment (OMP_NUM_THREADS,
// TINYGPT_LOCK_TIMEOUT) cannot crash it or go unsaid; and under mpirun one rank's usage error
// ends every rank instead of leaving them waiting.
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "can_mpirun.hpp"
#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;

namespace {

// The commands that print what they were asked for on standard output, on the trained model in
// `run`; a train --json into `out`.
std::vector<std::vector<std::string>> printing_commands(const std::string& run, const std::string& out) {
  return {{"sample", "--model", run, "--tokens", "20"},
          {"sample", "--model", run, "--tokens", "20", "--json"},
          {"eval", "--model", run, "--json", "--threads", "1"},
          {"heads", "--model", run, "--json", "--threads", "1"},
          tiny_train_args(out, {"--steps", "2", "--eval-every", "2", "--json"}),
          {"help"},
          {"help", "train"},
          {"--help"},
          {"--version"},
          {"completion", "bash"}};
}

CliOptions with_env(std::vector<std::string> env) {
  CliOptions options;
  options.env = std::move(env);
  return options;
}

// The lines of stderr that start with `prefix`.
size_t lines_starting(const CliResult& r, const std::string& prefix) {
  size_t count = 0;
  for (const std::string& line : r.err_lines()) count += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return count;
}

}  // namespace

TEST_CASE("output that standard output cannot take fails every printing command in one line",
          "[cli][process][slow]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  CliOptions full;
  full.stdout_path = "/dev/full";
  CliOptions closed;
  closed.close_stdout = true;
  for (const auto& [options, reason] : {std::pair{full, std::string("No space left on device")},
                                        std::pair{closed, std::string("Bad file descriptor")}}) {
    fs::remove_all(dir.file("out"));
    for (const std::vector<std::string>& args : printing_commands(run, dir.file("out"))) {
      const CliResult r = run_cli(args, options);
      INFO(r.describe());
      CHECK(r.exited_with(1));
      // The last line, and the only error (train reports its progress on stderr before it).
      CHECK(lines_starting(r, "tinygpt: error:") == 1);
      CHECK_THAT(r.err, Catch::Matchers::EndsWith("\ntinygpt: error: cannot write to standard output: " +
                                                   reason + "\n") ||
                            Catch::Matchers::Equals("tinygpt: error: cannot write to standard output: " +
                                                    reason + "\n"));
      fs::remove_all(dir.file("out"));
    }
  }
}

TEST_CASE("a closed standard output never sends a command's output into one of its files",
          "[cli][process]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  CliOptions closed;
  closed.close_stdout = true;
  // The summary comes at the end, with the run's lock file and log open.
  const CliResult r = run_cli({"train", "--resume", run, "--steps", "30", "--json", "--threads", "1"}, closed);
  INFO(r.describe());
  CHECK(r.exited_with(1));
  CHECK(saved_step(run) == 30);
  for (const auto& [name, bytes] : snapshot(run)) {
    INFO(name);
    CHECK(bytes.find("\"steps_run\"") == std::string::npos);  // a key of the summary only
  }
  run_ok({"train", "--resume", run, "--steps", "40", "--threads", "1"});
}

TEST_CASE("a pipe closed early ends sample quietly", "[cli][process]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const std::string command = "( '" + tinygpt_binary() + "' sample --model '" + run +
                              "' --tokens 100000 2> '" + dir.file("err") + "'; echo $? > '" +
                              dir.file("status") + "' ) | head -c1 > /dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  const int status = std::stoi(read_bytes(dir.file("status")));
  CHECK(status == 128 + SIGPIPE);  // the shell's code for a process SIGPIPE ended
  CHECK(read_bytes(dir.file("err")).empty());
}

TEST_CASE("a failing command with stderr on a full device exits with its status and no crash",
          "[cli][process]") {
  ScratchDir dir;
  for (const auto& [args, code] : {std::pair{std::string("sample --model '") + dir.file("none") + "'", 1},
                                   std::pair{std::string("train --bogus-flag"), 2}}) {
    CAPTURE(args);
    const int status = std::system(("'" + tinygpt_binary() + "' " + args + " 2> /dev/full").c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == code);
  }
}

TEST_CASE("sample prints every byte the model makes including NUL", "[cli][process]") {
  ScratchDir dir;
  std::string text;
  for (int i = 0; i < 400; ++i) text += std::string("ab\0c", 4);
  write_bytes(dir.file("nul.txt"), text);
  const std::string run = dir.file("run");
  train_tiny_model(run, {"--data", dir.file("nul.txt"), "--steps", "60", "--eval-every", "30"});
  for (const std::vector<std::string>& extra : {std::vector<std::string>{}, {"--prompt", "ab"}}) {
    const CliResult r =
        run_ok(concat({"sample", "--model", run, "--tokens", "200", "--seed", "1"}, extra));
    CHECK(r.out.find('\0') != std::string::npos);
    CHECK(r.out.size() >= 200);
  }
}

TEST_CASE("OMP_NUM_THREADS beyond the machine or no count at all is noted once and run safely",
          "[cli][process][env][slow]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const std::string value : {"100000", "50000", "abc", "0", "-3", ""}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--version"},
          {"help"},
          {"sample", "--model", run, "--tokens", "5", "--threads", "0"},
          with_flag(tiny_train_args(dir.file("out"), {"--steps", "2", "--eval-every", "2"}),
                    "--threads", "0")}) {
      fs::remove_all(dir.file("out"));
      const CliResult r = run_cli(args, with_env({"OMP_NUM_THREADS=" + value}));
      INFO(r.describe());
      CHECK(r.exited_with(0));
      CHECK(lines_starting(r, "tinygpt: note: OMP_NUM_THREADS=") == 1);
      CHECK(lines_starting(r, "libgomp:") <= 1);  // its own warning, from one process only
      if (value == "100000") {
        CHECK_THAT(r.err, Catch::Matchers::Contains(
                              "tinygpt: note: OMP_NUM_THREADS=100000 is more than 4x the " +
                              std::to_string(cores) + " cores; using " + std::to_string(4 * cores)));
      }
    }
  }
  const CliResult sane = run_cli({"--version"}, with_env({"OMP_NUM_THREADS=2"}));
  INFO(sane.describe());
  CHECK(sane.exited_with(0));
  CHECK(sane.err.empty());
}

TEST_CASE("a malformed TINYGPT_LOCK_TIMEOUT is refused in one line naming it", "[cli][process][env]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  for (const std::string value : {"abc", "-1", "0", "nan", "inf", "1e400", "", "5s"}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"sample", "--model", run, "--tokens", "5"},
          {"eval", "--model", run, "--threads", "1"},
          tiny_train_args(dir.file("out"), {"--steps", "2"})}) {
      const CliResult r = run_cli(args, with_env({"TINYGPT_LOCK_TIMEOUT=" + value}));
      INFO(r.describe());
      CHECK(r.exited_with(2));
      CHECK(r.err_lines() == std::vector<std::string>{
                                 "tinygpt: error: TINYGPT_LOCK_TIMEOUT='" + value +
                                 "' is not a number of seconds above 0 (unset it to wait the default 60 s)"});
      CHECK(r.out.empty());
      CHECK_FALSE(fs::exists(dir.file("out")));
    }
  }
  const CliResult r = run_cli({"sample", "--model", run, "--tokens", "5"},
                              with_env({"TINYGPT_LOCK_TIMEOUT=0.5"}));
  INFO(r.describe());
  CHECK(r.exited_with(0));
}

TEST_CASE("mpirun: a usage error on one rank ends every rank with its line", "[cli][mpi][process]") {
  if (!can_mpirun()) {
    WARN("skipped: this build or machine has no mpirun");
    return;
  }
  ScratchDir dir;
  const std::string good = "-np 1 '" + tinygpt_binary() + "' train --out '" + dir.file("run") +
                           "' --steps 20 --batch 4 --threads 1";
  for (const std::string bad : {"--bogus-flag", "--batch 4 --batch 8", "--batch 0"}) {
    CAPTURE(bad);
    fs::remove_all(dir.file("run"));
    const std::string command = "timeout -s KILL 120 mpirun --allow-run-as-root --oversubscribe " +
                                good + " : " + good + " " + bad + " > '" + dir.file("mpi.out") +
                                "' 2> '" + dir.file("mpi.err") + "'";
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system(command.c_str());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string err = read_bytes(dir.file("mpi.err"));
    INFO(err);
    CHECK(seconds < 60.0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) != 0);
    CHECK(err.find("tinygpt: error: rank 1: ") != std::string::npos);
    CHECK(err.find("tinygpt: error:") == err.rfind("tinygpt: error:"));
  }
}
