// `tinygpt heads --composition / --importance / --patch / --counterfactual / --prune-curve` and
// `tinygpt prune` on a small two-layer model trained for a few steps.
#include <filesystem>

#include "cli/cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

TEST_CASE("heads: the circuit methods' JSON keys and pictures", "[cli][heads][circuits]") {
  ScratchDir dir;
  const std::string model = two_layer_run(dir);
  const CliResult r = run_cli({"heads", "--model", model, "--composition", "--importance", "--patch",
                               "--counterfactual", "--epsilon", "0.1", "--prune-curve", "--json",
                               "--out", dir.file("pics")});
  INFO(r.describe());
  REQUIRE(r.exited_with(0));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["composition"].size() == 4);  // 2 writers x 2 readers
  CHECK(j["composition"][0]["from"] == nlohmann::json::array({0, 0}));
  CHECK(j["composition"][0]["to"] == nlohmann::json::array({1, 0}));
  for (const char* key : {"q", "k", "v"}) CHECK(j["composition"][0].contains(key));
  REQUIRE(j["importance"].size() == 4);
  CHECK(j["importance"][3]["layer"] == 1);
  CHECK(j["importance"][3].contains("normalised"));
  REQUIRE(j["patching"].size() == 4);
  CHECK(j["patching"][0].contains("recovery"));
  CHECK(j.contains("residual_patching"));
  REQUIRE(j["counterfactual"].size() == 4);
  for (const char* key : {"uniform_tvd", "permuted_tvd", "adversarial_jsd"}) CHECK(j["counterfactual"][0].contains(key));
  CHECK(j["counterfactual_epsilon"] == 0.1);
  for (const char* order : {"importance", "ablation", "random"}) CHECK(j["prune_curve"][order]["loss"].size() == 5);
  for (const char* png : {"composition.png", "patching.png", "patching_residual.png", "prune_curve.png"}) {
    CHECK(std::filesystem::exists(dir.file("pics/" + std::string(png))));
  }
}

TEST_CASE("prune: a folder with fewer heads that loads and fine-tunes", "[cli][prune]") {
  ScratchDir dir;
  const std::string model = two_layer_run(dir);
  const CliResult r = run_cli({"prune", "--model", model, "--heads", "0.1,1.0", "--out", dir.file("p"), "--json"});
  INFO(r.describe());
  REQUIRE(r.exited_with(0));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["pruned_heads"] == nlohmann::json{{"0", {1}}, {"1", {0}}});
  CHECK(j["loss"]["pruned"].get<double>() == Approx(j["loss"]["zero_ablated"].get<double>()).epsilon(1e-5));
  CHECK(j["parameters"]["after"].get<int64_t>() < j["parameters"]["before"].get<int64_t>());
  const nlohmann::json config = nlohmann::json::parse(read_bytes(dir.file("p/config.json")));
  CHECK(config["pruned_heads"] == nlohmann::json{{"0", {1}}, {"1", {0}}});
  run_ok({"eval", "--model", dir.file("p"), "--data", "builtin:toy", "--json"});
  run_ok({"sample", "--model", dir.file("p"), "--prompt", "ab", "--tokens", "5"});
  run_ok({"train", "--init-from", dir.file("p"), "--out", dir.file("ft"), "--steps", "2", "--eval-every", "2",
          "--eval-iters", "1", "--batch", "2"});
  const CliResult twice = run_cli({"prune", "--model", model, "--heads", "0.0,0.1", "--out", dir.file("q")});
  CHECK_FALSE(twice.exited_with(0));
  CHECK_THAT(twice.err, Catch::Contains("every head of layer 0"));  // exit 2: the head list's mistake
  CHECK(twice.exited_with(2));
}
