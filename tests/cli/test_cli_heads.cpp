// The demo's claim in miniature: the default model, trained on the built-in corpus, grows a
// previous-token head in layer 0 and an induction head in layer 1. 5,000 steps at a constant
// learning rate (the demo's 8,000 decay it) take ~40 s on 2 cores, so the sanitizer build skips it.
#include <algorithm>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

TEST_CASE("the default model grows a previous-token head in layer 0 and an induction head in layer 1",
          "[cli][heads][slow]") {
  ScratchDir dir;
  const std::string model = dir.file("run");
  CliOptions slow;
  slow.timeout = std::chrono::minutes(10);
  const CliResult train = run_cli({"train", "--out", model, "--steps", "5000", "--min-lr", "2e-2",
                                   "--eval-every", "5000", "--eval-iters", "2"},
                                  slow);
  INFO(train.describe());
  REQUIRE(train.exited_with(0));

  const CliResult heads = run_cli({"heads", "--model", model, "--json"});
  INFO(heads.describe());
  REQUIRE(heads.exited_with(0));
  double best_previous = 0.0, best_induction = 0.0;
  for (const auto& head : nlohmann::json::parse(heads.out)) {
    if (head["layer"] == 0) best_previous = std::max(best_previous, head["previous_token"].get<double>());
    if (head["layer"] == 1) best_induction = std::max(best_induction, head["induction"].get<double>());
  }
  CHECK(best_previous >= 0.8);
  CHECK(best_induction >= 0.6);
}
