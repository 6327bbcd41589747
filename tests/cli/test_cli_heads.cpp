// The demo's figures, from the demo's own command (`tinygpt train --out DIR`, every other flag
// at its default): a sharp previous-token head in layer 0, an induction head in layer 1, and
// copying that takes the second copy of a random sequence below a tenth of the first's loss.
// The final evaluation record of log.jsonl holds the same scores as the table train prints
// (the same probes). ~1 minute on 2 cores, so the sanitizer build skips it.
#include <algorithm>
#include <regex>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

// The last evaluation record of a run's log.jsonl that scored the heads.
static nlohmann::json last_head_record(const std::string& run) {
  nlohmann::json last;
  std::istringstream log(read_bytes(run + "/log.jsonl"));
  for (std::string line; std::getline(log, line);) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (record.contains("heads")) last = std::move(record);
  }
  REQUIRE(!last.is_null());
  return last;
}

TEST_CASE("the demo command grows a sharp previous-token head, an induction head, and copies",
          "[cli][heads][slow]") {
  ScratchDir dir;
  const std::string model = dir.file("run");
  CliOptions slow;
  slow.timeout = std::chrono::minutes(15);
  const CliResult train = run_cli({"train", "--out", model}, slow);
  INFO(train.describe());
  REQUIRE(train.exited_with(0));

  const nlohmann::json last = last_head_record(model);
  double best_previous = 0.0, best_induction = 0.0;
  for (const auto& head : last["heads"]) {
    if (head["layer"] == 0) best_previous = std::max(best_previous, head["previous_token"].get<double>());
    if (head["layer"] == 1) best_induction = std::max(best_induction, head["induction"].get<double>());
  }
  INFO("previous-token " << best_previous << ", induction " << best_induction << ", second/first "
                         << last["in_context"]["ratio"]);
  CHECK(best_previous >= 0.9);
  CHECK(best_induction >= 0.85);
  CHECK(last["in_context"]["ratio"].get<double>() <= 0.10);
  // The printed table says the same.
  CHECK(train.out.find("previous-token") != std::string::npos);
  CHECK(train.out.find("induction") != std::string::npos);
}

TEST_CASE("train ends with report.html and heads --html writes the explorer of the --text probe",
          "[cli][heads][report]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  const nlohmann::json trained = explorer_data(model + "/report.html");
  CHECK(trained["heads"].size() == 2);
  CHECK(trained["loss"]["step"].size() == 20);  // every step of log.jsonl
  CHECK(trained["loss"]["val"].size() == 2);    // and both evaluations

  const std::string text = "the cat. cat";  // within the tiny model's context of 16
  const std::string page = dir.file("page.html");
  const CliResult heads = run_ok({"heads", "--model", model, "--text", text, "--json", "--html", page,
                                  "--out", dir.file("pics"), "--threads", "1"});
  const nlohmann::json scores = nlohmann::json::parse(heads.out)["heads"];
  const nlohmann::json data = explorer_data(page);
  REQUIRE(data["tokens"].size() == text.size());
  for (size_t i = 0; i < text.size(); ++i) CHECK(data["tokens"][i] == std::string(1, text[i]));
  REQUIRE(data["heads"].size() == scores.size());
  for (size_t h = 0; h < scores.size(); ++h) {
    CHECK(data["heads"][h]["role"] == scores[h]["role"]);
    CHECK(data["heads"][h]["scores"]["previous_token"].get<double>() ==
          Approx(scores[h]["previous_token"].get<double>()).margin(1e-4));
  }
}

TEST_CASE("heads on a checkpoint probes the run's own split: its scores are the last evaluation's",
          "[cli][heads]") {
  ScratchDir dir;
  const std::string model = dir.file("run");
  run_ok(tiny_train_args(model, {"--val-fraction", "0.3"}));
  const nlohmann::json last = last_head_record(model);
  const nlohmann::json report =
      nlohmann::json::parse(run_ok({"heads", "--model", model, "--json", "--threads", "1"}).out);
  const nlohmann::json& heads = report["heads"];
  REQUIRE(heads.size() == last["heads"].size());
  for (size_t i = 0; i < heads.size(); ++i) {
    for (const char* score : {"previous_token", "induction", "local", "entropy"}) {
      INFO("head " << i << " " << score);
      CHECK(heads[i][score].get<double>() == Approx(last["heads"][i][score].get<double>()).epsilon(1e-9));
    }
    // The role's own score, as the table prints it.
    CHECK(heads[i]["role_score"].get<double>() ==
          heads[i].value(std::regex_replace(heads[i]["role"].get<std::string>(), std::regex("-"), "_"),
                         heads[i]["entropy"].get<double>()));
  }
  // The in-context line: the same as the evaluation's.
  CHECK(report["in_context"]["ratio"].get<double>() ==
        Approx(last["in_context"]["ratio"].get<double>()).epsilon(1e-9));
}
