// Formation tracking in `tinygpt train`, and `tinygpt heads --ablate / --ablate-heads /
// --attribute` on a small model trained for a few steps.
#include <filesystem>
#include <fstream>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

TEST_CASE("train: eval records carry heads and in_context, heads_over_time.png is drawn",
          "[cli][heads][formation]") {
  ScratchDir dir;
  const std::string model = two_layer_run(dir);
  std::ifstream log(model + "/log.jsonl");
  std::string line;
  int evals = 0;
  while (std::getline(log, line)) {
    const auto record = nlohmann::json::parse(line);
    if (!record.contains("val_loss")) continue;
    ++evals;
    REQUIRE(record.contains("heads"));
    REQUIRE(record["heads"].size() == 4);
    for (const char* key : {"layer", "head", "role", "previous_token", "induction", "duplicate_token",
                            "first_token", "current_token", "local", "entropy"}) {
      CHECK(record["heads"][3].contains(key));
    }
    const auto& ic = record["in_context"];
    CHECK(ic["ratio"].get<double>() ==
          Approx(ic["second_copy_loss"].get<double>() / ic["first_copy_loss"].get<double>()));
  }
  CHECK(evals == 2);
  CHECK(std::filesystem::file_size(model + "/heads_over_time.png") > 1000);
}

TEST_CASE("heads --ablate, --ablate-heads and --attribute from the CLI", "[cli][heads][ablation]") {
  ScratchDir dir;
  const std::string model = two_layer_run(dir);
  const CliResult each = run_cli({"heads", "--model", model, "--ablate", "--json"});
  INFO(each.describe());
  REQUIRE(each.exited_with(0));
  const auto list = nlohmann::json::parse(each.out)["heads"];
  REQUIRE(list.size() == 4);
  CHECK(list[1].contains("ablated_second_copy_ratio"));
  CHECK(list[1].contains("ablated_loss_delta"));

  const CliResult set = run_cli({"heads", "--model", model, "--ablate", "mean", "--ablate-heads",
                                 "0.1,1.0", "--json"});
  INFO(set.describe());
  REQUIRE(set.exited_with(0));
  const auto object = nlohmann::json::parse(set.out);
  CHECK(object["ablated_heads"] == "0.1,1.0");
  CHECK(object["ablation"] == "mean");
  CHECK(object.contains("ablated_second_copy_ratio"));
  CHECK(object["heads"].size() == 4);

  const CliResult attr = run_cli({"heads", "--model", model, "--attribute", "5", "--out", dir.file("pics")});
  INFO(attr.describe());
  REQUIRE(attr.exited_with(0));
  CHECK_THAT(attr.out, Catch::Contains("Spearman rank correlation"));
  CHECK(std::filesystem::exists(dir.file("pics/attribution_pos5.png")));

  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"--ablate", "half"}, {"--ablate-heads", "2.0"}, {"--ablate-heads", "x"}, {"--ablate-heads", ""},
           {"--attribute", "999"}, {"--text", "a"}}) {
    std::vector<std::string> args = {"heads", "--model", model};
    args.insert(args.end(), bad.begin(), bad.end());
    const CliResult r = run_cli(args);
    INFO(r.describe());
    CHECK(r.exited_with(2));  // each is the command line's mistake
    CHECK_THAT(r.err, Catch::Contains("tinygpt: error") && Catch::Contains(bad[0]));
  }
}
