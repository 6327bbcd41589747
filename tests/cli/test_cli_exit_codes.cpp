// Exit status: 0 success, 1 a runtime failure, 2 a usage error (with the subcommand's help named),
// 128 + signal after an interrupted run saved (tests of SIGINT/SIGTERM elsewhere).
#include <algorithm>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

TEST_CASE("every usage error exits 2 in one line naming the subcommand's help", "[cli][exit]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"train", "--layers", "0"}, "train"},          // a value out of range
      {{"train", "--steps", "abc"}, "train"},         // not a number
      {{"train", "--no-such-flag"}, "train"},         // an unknown flag
      {{"train", "--pos", "spiral"}, "train"},        // not one of the choices
      {{"sample"}, "sample"},                         // a required flag missing
      {{"sample", "--model"}, "sample"},              // a flag without its value
      {{"eval", "--split", "test", "--model", "m"}, "eval"},
      {{"heads", "--attribute", "-1", "--model", "m"}, "heads"},
      {{"bench", "--batch", "-3"}, "bench"},
      {{"help", "nosuch"}, "help"},
  };
  for (const auto& [args, command] : cases) {
    const CliResult r = run_cli(args);
    check_one_line_error(r, {"tinygpt " + command + " --help"});
    CHECK(r.exited_with(2));
  }
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{}, {"trian"}, {"--bogus", "train"}}) {
    const CliResult r = run_cli(args);
    check_one_line_error(r, {"see --help"});
    CHECK(r.exited_with(2));
  }
}

TEST_CASE("a value no model, schedule or run can take exits 2, before anything is written", "[cli][exit]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), out = dir.file("out");
  train_tiny_model(run);
  const DirSnapshot before = snapshot(run);
  const std::vector<std::vector<std::string>> cases = {
      {"--kv-heads", "3", "--heads", "2"},                        // GQA needs a divisor
      {"--d-model", "10", "--heads", "3"},                        // heads split the width
      {"--min-lr", "1", "--lr", "0.1"},                           // the decay goes down
      {"--grad-accum", "3", "--batch", "4"},                      // equal micro-batches
      {"--init-from", run, "--layers", "3"},                      // a fine-tune keeps the shape
      {"--init-from", run, "--resume", run},                      // one or the other
      {"--init-from", run, "--out", run},                         // a new run needs a new folder
      {"--resume", run, "--lr", "0.5"},                           // a resumed run keeps its own
      {"--resume", run, "--steps", "20"},                         // already there
      {"--resume", run, "--out", out},                            // resume writes back into run
  };
  for (const std::vector<std::string>& flags : cases) {
    std::vector<std::string> args = concat({"train"}, flags);
    if (std::find(flags.begin(), flags.end(), "--out") == flags.end() &&
        std::find(flags.begin(), flags.end(), "--resume") == flags.end()) {
      args = concat(args, {"--out", out});
    }
    const CliResult r = run_cli(args);
    check_one_line_error(r, {"tinygpt train --help"});
    CHECK(r.exited_with(2));
    CHECK_FALSE(std::filesystem::exists(out));
  }
  CHECK(snapshot(run) == before);
}

TEST_CASE("a runtime failure exits 1, and help and a finished command exit 0", "[cli][exit]") {
  ScratchDir dir;
  const CliResult missing = run_cli({"sample", "--model", dir.file("nothing-here")});
  check_one_line_error(missing, {"nothing-here"});
  CHECK(missing.exited_with(1));
  CHECK(run_cli({"train", "--help"}).exited_with(0));
  CHECK(run_cli({"--version"}).exited_with(0));
}

TEST_CASE("tinygpt help COMMAND prints what --help prints", "[cli][exit]") {
  for (const std::string command : {"train", "sample", "eval", "heads", "bench"}) {
    INFO(command);
    const CliResult help = run_ok({"help", command});
    const CliResult flag = run_ok({command, "--help"});
    CHECK(help.out == flag.out);
    CHECK(help.out.find("tinygpt " + command) != std::string::npos);
  }
  CHECK(run_ok({"help"}).out == run_ok({"--help"}).out);
}
