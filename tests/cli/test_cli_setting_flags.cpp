// A setting the library refuses is named by its flag (issue 58, item 5): the command line maps the
// setting an error carries to its flag through one table, whichever command ran and whatever else
// the message says.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_helpers.hpp"

using namespace tinygpt::testing;

namespace {

// Flags whose values the library refuses together, and what the one line must say.
struct Refusal {
  std::vector<std::string> changes;
  std::vector<std::string> fragments;
};

// Each refusal's changes to the arguments `command`, and the one line it must end with.
void check_refusals(const std::vector<std::string>& command, const std::vector<Refusal>& refusals) {
  for (const Refusal& refusal : refusals) {
    const CliResult r = run_cli(with_changes(command, refusal.changes));
    check_one_line_error(r, refusal.fragments);
  }
}

// bench with a model as small as train's tiny one.
std::vector<std::string> tiny_bench_args() {
  return {"bench", "--steps", "1", "--warmup", "0", "--layers", "1", "--heads", "2", "--d-model", "16",
          "--block", "16", "--batch", "4", "--threads", "1"};
}

// The model's settings, which train and bench check alike.
const std::vector<Refusal>& model_refusals() {
  static const std::vector<Refusal> refusals = {
      {{"--d-model", "18", "--heads", "4"}, {"--d-model 18 is not divisible by --heads 4"}},
      {{"--kv-heads", "3", "--heads", "2"}, {"--kv-heads 3 does not divide --heads 2"}},
      {{"--pos", "rope", "--d-model", "6", "--heads", "2"}, {"--d-model 6 / --heads 2"}},
      {{"--attention", "window", "--window", "40", "--block", "16"},
       {"--window 40 is beyond the context: --block 16"}},
      {{"--attention", "window", "--window", "4", "--global-tokens", "20", "--block", "16"},
       {"--global-tokens 20 is beyond the context: --block 16"}},
      {{"--attention", "strided", "--stride", "20", "--block", "16"},
       {"--stride 20 is beyond the context: --block 16"}},
      {{"--attention", "bigbird", "--window", "4", "--block-size", "5", "--block", "16"},
       {"--block-size 5 does not divide --block 16 into whole blocks"}},
      {{"--attention", "bigbird", "--window", "4", "--block-size", "4", "--random-blocks", "5",
        "--block", "16"},
       {"--random-blocks 5 is more than the context's 4 blocks (--block 16 / --block-size 4)"}},
      {{"--heads", "0"}, {"--heads"}},
      {{"--layers", "0"}, {"--layers"}},
      {{"--dropout", "1"}, {"--dropout"}},
  };
  return refusals;
}

}  // namespace

TEST_CASE("train names each refused setting by its flag", "[cli][errors][settings]") {
  ScratchDir dir;
  const std::vector<std::string> train = tiny_train_args(dir.file("m"));
  check_refusals(train, model_refusals());
  check_refusals(train, {
      {{"--batch", "12", "--grad-accum", "5"}, {"--batch 12 is not divisible by --grad-accum 5"}},
      {{"--lr", "0.01", "--min-lr", "0.1"}, {"--min-lr 0.1 is above --lr 0.01"}},
      {{"--steps", "0"}, {"--steps"}},
      {{"--lr", "0"}, {"--lr"}},
      {{"--beta2", "1"}, {"--beta2"}},
      {{"--optimizer", "adam"}, {"--optimizer"}},
      {{"--val-fraction", "1"}, {"--val-fraction"}},
  });
  check_refusals(tiny_seq2seq_args(dir.file("s")),
                 {{{"--d-model", "18", "--heads", "4"}, {"--d-model 18 is not divisible by --heads 4"}},
                  {{"--batch", "16", "--grad-accum", "3"}, {"--batch 16 is not divisible by --grad-accum 3"}}});
}

TEST_CASE("bench names each refused setting by its flag", "[cli][errors][settings]") {
  check_refusals(tiny_bench_args(), model_refusals());
}

// The mapping reads the setting an error carries, not its text: a message that names another
// setting in words ("decays from lr down to min_lr") still calls the refused one by its flag and
// leaves the words alone.
TEST_CASE("a refused setting keeps its own flag when its message names another setting",
          "[cli][errors][settings]") {
  ScratchDir dir;
  const CliResult r = run_cli(tiny_train_args(dir.file("m"), {"--lr", "0.01", "--min-lr", "0.1"}));
  check_one_line_error(r, {"--min-lr 0.1 is above --lr 0.01", "decays from lr down to min_lr"});
}

TEST_CASE("eval names the context too long for its text by --block", "[cli][errors][settings]") {
  ScratchDir dir;
  train_tiny_model(dir.file("m"));
  const CliResult r = run_cli({"eval", "--model", dir.file("m"), "--data", "builtin:toy", "--block", "16",
                               "--val-fraction", "0.000001", "--split", "val"});
  check_one_line_error(r, {"--block 16 needs at least 17", "--val-fraction 1e-06"});
}
