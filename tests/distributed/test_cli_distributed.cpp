// Scaling out from the command line: --grad-accum N trains the same run as one batch (to
// rounding), resumes byte-exactly, and `mpirun -np 2` trains exactly the --grad-accum 2 run,
// resumes, and fails with one message. The mpirun cases skip when the build or the machine has
// no MPI.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/can_mpirun.hpp"
#include "cli/cli_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/io/safetensors.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "weights_close.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<double> logged(const std::string& dir, const char* key) {
  std::vector<double> values;
  for (const json& e : log_without_timing(dir)) {
    if (e.contains(key)) values.push_back(e[key].get<double>());
  }
  return values;
}

void check_same_files(const std::string& a, const std::string& b) {
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "tokenizer.json"}) {
    INFO(file);
    CHECK(read_bytes(a + "/" + file) == read_bytes(b + "/" + file));
  }
  CHECK(log_without_timing(a) == log_without_timing(b));
}

// Runs `mpirun -np 2 tinygpt <args>`, stdout and stderr into files of `dir`; the exit status.
int mpirun2(const std::vector<std::string>& args, const std::string& dir) {
  std::string command = "mpirun --allow-run-as-root --oversubscribe -np 2 " + tinygpt_binary();
  for (const auto& a : args) command += " '" + a + "'";
  command += " > '" + dir + "/mpi.out' 2> '" + dir + "/mpi.err'";
  return std::system(command.c_str());
}

// The pid of the rank `rank` of a tinygpt run writing to `out`, or 0: Open MPI gives each
// process its rank in OMPI_COMM_WORLD_RANK.
pid_t rank_pid(const std::string& out, int rank) {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline_file(entry.path() / "cmdline"), environ_file(entry.path() / "environ");
    const std::string cmdline((std::istreambuf_iterator<char>(cmdline_file)), {});
    const std::string environ((std::istreambuf_iterator<char>(environ_file)), {});
    if (cmdline.find("tinygpt") == std::string::npos || cmdline.find(out) == std::string::npos ||
        cmdline.find("mpirun") == 0) {
      continue;
    }
    std::istringstream variables(environ);
    for (std::string variable; std::getline(variables, variable, '\0');) {
      if (variable == wanted) return static_cast<pid_t>(std::stol(name));
    }
  }
  return 0;
}

// Waits up to `seconds` for `done`.
template <class F>
bool wait_for(F&& done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace

TEST_CASE("train --grad-accum 2 and 4 match one batch within 1e-6 after 10 steps",
          "[cli][grad_accum]") {
  ScratchDir dir;
  const std::string whole = dir.file("whole");
  train_tiny_model(whole, {"--steps", "10", "--eval-every", "10"});
  const auto whole_weights = tinygpt::io::load_safetensors(whole + "/model.safetensors").tensors;
  for (const char* n : {"2", "4"}) {
    INFO("--grad-accum " << n);
    const std::string split = dir.file(std::string("split") + n);
    train_tiny_model(split, {"--steps", "10", "--eval-every", "10", "--grad-accum", n});
    const auto a = logged(split, "grad_norm"), b = logged(whole, "grad_norm");
    REQUIRE(a.size() == 10);
    for (size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) <= 1e-6 * std::abs(b[i]));
    const WeightsDiff diff = compare_weights(
        tinygpt::io::load_safetensors(split + "/model.safetensors").tensors, whole_weights);
    INFO("worst tensor " << diff.worst_name << ": " << diff.worst_relative);
    CHECK(diff.worst_relative < 1e-6);
    CHECK(json::parse(read_bytes(split + "/trainer_state.json"))["options"]["grad_accum"] ==
          std::stoi(n));
  }
}

TEST_CASE("train --grad-accum: refused unless it divides --batch, and kept when resuming",
          "[cli][grad_accum][errors]") {
  ScratchDir dir;
  check_one_line_error(run_cli(tiny_train_args(dir.file("a"), {"--grad-accum", "3"})),
                       {"--batch 4", "--grad-accum 3"});
  CHECK_FALSE(fs::exists(dir.file("a")));
  train_tiny_model(dir.file("b"), {"--grad-accum", "2"});
  check_one_line_error(
      run_cli({"train", "--resume", dir.file("b"), "--steps", "30", "--grad-accum", "4"}),
      {"--grad-accum"});
}

TEST_CASE("train --grad-accum 2: 10 then resume to 20 is byte-identical to 20", "[cli][grad_accum][resume]") {
  ScratchDir dir;
  const std::string a = dir.file("a"), b = dir.file("b");
  const std::vector<std::string> run = {"--grad-accum", "2", "--lr-decay-steps", "20"};
  train_tiny_model(a, concat(run, {"--steps", "10"}));
  run_ok({"train", "--resume", a, "--steps", "20", "--threads", "1"});
  train_tiny_model(b, concat(run, {"--steps", "20"}));
  check_same_files(a, b);
  CHECK(read_bytes(a + "/trainer_state.json") == read_bytes(b + "/trainer_state.json"));
}

TEST_CASE("mpirun -np 2 trains, and resumes, exactly the --grad-accum 2 run", "[cli][mpi][slow]") {
  if (!can_mpirun()) {
    WARN("skipped: this build has no MPI, or mpirun is not installed");
    return;
  }
  ScratchDir dir;
  const std::string mpi = dir.file("mpi"), accum = dir.file("accum");
  const std::vector<std::string> run = {"--lr-decay-steps", "20"};
  {
    const int status = mpirun2(tiny_train_args(mpi, concat(run, {"--steps", "10"})), dir.file(""));
    INFO(read_bytes(dir.file("mpi.err")));
    REQUIRE(status == 0);
  }
  // Rank 0 alone reports: one start line, not two.
  const std::string err = read_bytes(dir.file("mpi.err"));
  CHECK(err.find("training builtin:toy") == err.rfind("training builtin:toy"));
  CHECK(err.find("2 ranks x grad-accum 1") != std::string::npos);
  {
    const int status = mpirun2({"train", "--resume", mpi, "--steps", "20"}, dir.file(""));
    INFO(read_bytes(dir.file("mpi.err")));
    REQUIRE(status == 0);
  }
  train_tiny_model(accum, concat(run, {"--steps", "20", "--grad-accum", "2"}));
  check_same_files(mpi, accum);
  CHECK(json::parse(read_bytes(mpi + "/trainer_state.json"))["ranks"] == 2);
}

TEST_CASE("mpirun -np 2 trains an encoder-decoder exactly as its --grad-accum 2 run", "[cli][mpi][seq2seq][slow]") {
  if (!can_mpirun()) {
    WARN("skipped: this build has no MPI, or mpirun is not installed");
    return;
  }
  ScratchDir dir;
  const std::string mpi = dir.file("mpi"), accum = dir.file("accum");
  const auto args = [](const std::string& out) {
    return std::vector<std::string>{"train", "--arch", "encoder-decoder", "--out", out, "--layers", "1",
                                    "--heads", "2", "--d-model", "32", "--block", "20", "--steps", "10",
                                    "--eval-every", "5", "--batch", "8", "--eval-iters", "2", "--threads", "1"};
  };
  const int status = mpirun2(args(mpi), dir.file(""));
  INFO(read_bytes(dir.file("mpi.err")));
  REQUIRE(status == 0);
  run_ok(concat(args(accum), {"--grad-accum", "2"}));
  check_same_files(mpi, accum);
}

TEST_CASE("mpirun -np 2 with a bad input stops both ranks with one message and no checkpoint",
          "[cli][mpi][errors][slow]") {
  if (!can_mpirun()) {
    WARN("skipped: this build has no MPI, or mpirun is not installed");
    return;
  }
  ScratchDir dir;
  const std::string out = dir.file("run");
  const int status =
      mpirun2(tiny_train_args(out, {"--data", dir.file("missing.txt")}), dir.file(""));
  CHECK(status != 0);
  const std::string err = read_bytes(dir.file("mpi.err"));
  INFO(err);
  size_t count = 0;
  for (size_t at = err.find("tinygpt: error:"); at != std::string::npos;
       at = err.find("tinygpt: error:", at + 1)) {
    ++count;
  }
  CHECK(count == 1);
  CHECK(err.find("missing.txt") != std::string::npos);
  CHECK_FALSE(tinygpt::train::has_checkpoint(out));
}

TEST_CASE("mpirun -np 2: a diverging run stops both ranks with one message, keeping its last good "
          "checkpoint", "[cli][mpi][errors][slow]") {
  if (!can_mpirun()) {
    WARN("skipped: this build has no MPI, or mpirun is not installed");
    return;
  }
  // As the single-process test: weight decay 101 at lr 1 blows the weights up within ~15 steps.
  ScratchDir dir;
  const std::string run = dir.file("run");
  const int status = mpirun2(tiny_train_args(run, {"--steps", "100", "--lr", "1", "--min-lr", "0",
                                                   "--warmup", "0", "--weight-decay", "101",
                                                   "--lr-decay-steps", "100", "--eval-every", "3"}),
                             dir.file(""));
  CHECK(status != 0);
  const std::string err = read_bytes(dir.file("mpi.err"));
  INFO(err);
  CHECK(err.find("tinygpt: error: training diverged") != std::string::npos);
  CHECK(err.find("tinygpt: error:") == err.rfind("tinygpt: error:"));  // one message, not one per rank
  const int64_t good = saved_step(run);
  CHECK(good >= 3);
  CHECK_NOTHROW(tinygpt::train::load_run(run));
  CHECK(err.find("last good checkpoint (step " + std::to_string(good) + ")") != std::string::npos);
}

TEST_CASE("mpirun -np 2: a rank killed mid-run takes the other down and leaves a checkpoint that "
          "loads and resumes", "[cli][mpi][errors][slow]") {
  if (!can_mpirun()) {
    WARN("skipped: this build has no MPI, or mpirun is not installed");
    return;
  }
  ScratchDir dir;
  const std::string run = dir.file("run");
  std::string command = "mpirun --allow-run-as-root --oversubscribe -np 2 " + tinygpt_binary();
  for (const auto& a : tiny_train_args(run, {"--steps", "1000000", "--eval-every", "5",
                                             "--eval-iters", "1", "--lr-decay-steps", "100"})) {
    command += " '" + a + "'";
  }
  REQUIRE(std::system((command + " > '" + dir.file("mpi.out") + "' 2> '" + dir.file("mpi.err") +
                       "' & echo $! > '" + dir.file("mpirun.pid") + "'").c_str()) == 0);
  const auto mpirun_pid = static_cast<pid_t>(std::stol(read_bytes(dir.file("mpirun.pid"))));
  const auto running = [&] { return ::kill(mpirun_pid, 0) == 0; };
  // Let it save a few checkpoints, then kill rank 1 as the out-of-memory killer would.
  REQUIRE(wait_for([&] { return tinygpt::train::has_checkpoint(run) && saved_step(run) >= 15; }, 120));
  const pid_t victim = rank_pid(run, 1);
  REQUIRE(victim > 0);
  REQUIRE(::kill(victim, SIGKILL) == 0);
  const bool stopped = wait_for([&] { return !running() && rank_pid(run, 0) == 0; }, 60);
  if (!stopped) {
    ::kill(mpirun_pid, SIGKILL);
    if (const pid_t rank0 = rank_pid(run, 0)) ::kill(rank0, SIGKILL);
  }
  INFO(read_bytes(dir.file("mpi.err")));
  CHECK(stopped);  // the surviving rank does not train on alone, nor hang
  // The folder holds a committed checkpoint, whatever moment the kill hit.
  const int64_t step = saved_step(run);
  CHECK(step >= 15);
  CHECK_NOTHROW(tinygpt::train::load_run(run));
  const int status = mpirun2({"train", "--resume", run, "--steps", std::to_string(step + 5)}, dir.file(""));
  INFO(read_bytes(dir.file("mpi.err")));
  CHECK(status == 0);
  CHECK(saved_step(run) == step + 5);
}

TEST_CASE("mpirun -np 2: SIGTERM to one rank stops both at the same step with one checkpoint",
          "[cli][mpi][signals][slow]") {
  if (!can_mpirun()) {
    WARN("skipped: this build or machine has no MPI");
    return;
  }
  ScratchDir dir;
  const std::string run = dir.file("run");
  std::string command = "(mpirun --allow-run-as-root --oversubscribe -np 2 " + tinygpt_binary();
  for (const auto& a : tiny_train_args(run, {"--steps", "1000000", "--eval-every", "1000000"})) {
    command += " '" + a + "'";
  }
  command += " > '" + dir.file("mpi.out") + "' 2> '" + dir.file("mpi.err") + "'; echo $? > '" +
             dir.file("status") + "') &";
  REQUIRE(std::system(command.c_str()) == 0);
  REQUIRE(wait_for([&] { return fs::exists(run + "/log.jsonl") && fs::file_size(run + "/log.jsonl") > 0; }, 60));
  // One rank only, as a scheduler's signal to one process would: the ranks agree to stop.
  const std::string ranks = "pgrep -f -- '^" + tinygpt_binary() + " train --out " + run + " '";
  CHECK(std::system((ranks + " | tail -1 | xargs kill -TERM").c_str()) == 0);
  REQUIRE(wait_for([&] { return fs::exists(dir.file("status")) && !read_bytes(dir.file("status")).empty(); }, 60));
  INFO(read_bytes(dir.file("mpi.err")));
  CHECK(read_bytes(dir.file("status")) != "0\n");  // mpirun reports the ranks' 143 as a failure
  const int64_t step = saved_step(run);
  CHECK_THAT(read_bytes(dir.file("mpi.err")),
             Catch::Matchers::Contains("tinygpt: interrupted at step " + std::to_string(step) +
                                       "; checkpoint saved in " + run));
  CHECK(mpirun2({"train", "--resume", run, "--steps", std::to_string(step + 4), "--threads", "1"},
                dir.file("")) == 0);
  CHECK(saved_step(run) == step + 4);
}

TEST_CASE("mpirun ranks started on different runs all stop at setup with one line naming the difference",
          "[cli][mpi]") {
  if (!can_mpirun()) {
    WARN("skipped: this build or machine has no MPI");
    return;
  }
  ScratchDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sees a dog.\n";
  write_bytes(dir.file("a.txt"), text);
  write_bytes(dir.file("b.txt"), text + "the dog sees a cat.\n");
  const std::string run = dir.file("run");
  const std::vector<std::string> base = tiny_train_args(run, {"--data", dir.file("a.txt")});
  for (const auto& [change, named] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--lr", "0.5"}, "lr"},
           {{"--seed", "7"}, "seed"},
           {{"--steps", "30"}, "steps"},
           {{"--data", dir.file("b.txt")}, "text (its size and SHA-256)"}}) {
    CAPTURE(change);
    std::string command = "timeout 120 mpirun --allow-run-as-root --oversubscribe -np 1 " + tinygpt_binary();
    for (const auto& a : base) command += " '" + a + "'";
    command += " : -np 1 " + tinygpt_binary();
    for (const auto& a : tiny_train_args(run, concat({"--data", dir.file("a.txt")}, change))) command += " '" + a + "'";
    command += " > '" + dir.file("mpi.out") + "' 2> '" + dir.file("mpi.err") + "'";
    const int status = std::system(command.c_str());
    const std::string err = read_bytes(dir.file("mpi.err"));
    INFO(err);
    CHECK(status != 0);
    CHECK(WEXITSTATUS(status) != 124);  // no rank waited for ever
    const std::string line = "tinygpt: error: the 2 ranks were started on different runs: their " + named + " differs";
    CHECK(err.find(line) != std::string::npos);
    CHECK(err.find(line) == err.rfind(line));  // said once
    CHECK_FALSE(fs::exists(run));
  }
}
