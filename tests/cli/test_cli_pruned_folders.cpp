// A folder written by `tinygpt prune`: refused head lists, every circuit method and the explorer
// on it (pruned heads at their original numbers), and an independent PyTorch GPT-2 forward of it.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

namespace {

// Two layers of four heads, trained a few steps.
std::string four_head_run(const ScratchDir& dir) {
  const std::string model = dir.file("run");
  run_ok({"train", "--out", model, "--steps", "10", "--eval-every", "10", "--eval-iters", "1", "--layers", "2",
          "--heads", "4", "--d-model", "16", "--block", "16", "--batch", "2"});
  return model;
}

bool has_head(const nlohmann::json& list, int layer, int head) {
  for (const nlohmann::json& h : list) {
    if (h["layer"] == layer && h["head"] == head) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("prune: a head list the model cannot take is one line, exit 2, nothing written", "[cli][prune]") {
  ScratchDir dir;
  const std::string model = two_layer_run(dir);
  for (const char* heads : {"x", "1.", "0.1.2", "0.2", "2.0", "-1.0", "0.1,0.1", "0.0,0.1", ""}) {
    const CliResult r = run_cli({"prune", "--model", model, "--heads", heads, "--out", dir.file("p")});
    INFO(heads << "\n" << r.describe());
    CHECK(r.exited_with(2));
    check_one_line_error(r, {"--heads"});
    CHECK_FALSE(std::filesystem::exists(dir.file("p")));
  }
}

TEST_CASE("prune --out never replaces a run, the model itself or other files unasked", "[cli][prune]") {
  ScratchDir dir;
  const std::string model = two_layer_run(dir);
  const std::string other_run = dir.file("other");
  std::filesystem::copy(model, other_run, std::filesystem::copy_options::recursive);
  const std::string notes = dir.file("notes");
  std::filesystem::create_directories(notes);
  write_bytes(notes + "/todo.txt", "mine\n");
  const std::string pruned = dir.file("pruned");
  run_ok({"prune", "--model", model, "--heads", "0.1", "--out", pruned});

  struct Case {
    std::string out;
    bool force;
    int code;
    std::vector<std::string> fragments;
  };
  for (const Case& c : std::vector<Case>{
           {model, true, 2, {"--out " + model, "the folder of the model it prunes"}},
           {other_run, true, 1, {other_run, "holds a training run (trainer_state.json)"}},
           {notes, false, 1, {notes, "is not empty (todo.txt)", "--force"}},
           {pruned, false, 1, {pruned, "already holds a model", "--force"}}}) {
    const DirSnapshot before = snapshot(c.out);
    const DirSnapshot model_before = snapshot(model);
    std::vector<std::string> args = {"prune", "--model", model, "--heads", "1.0", "--out", c.out};
    if (c.force) args.push_back("--force");
    const CliResult r = run_cli(args);
    INFO(r.describe());
    CHECK(r.exited_with(c.code));
    check_one_line_error(r, c.fragments);
    CHECK(snapshot(c.out) == before);
    CHECK(snapshot(model) == model_before);
  }

  // --force replaces a model folder, and writes beside files that are not one's, keeping them.
  run_ok({"prune", "--model", model, "--heads", "1.0", "--out", pruned, "--force"});
  const nlohmann::json config = nlohmann::json::parse(read_bytes(pruned + "/config.json"));
  CHECK(config["pruned_heads"] == nlohmann::json::parse(R"({"1": [0]})"));
  run_ok({"prune", "--model", model, "--heads", "1.0", "--out", notes, "--force"});
  CHECK(read_bytes(notes + "/todo.txt") == "mine\n");
  run_ok({"eval", "--model", notes, "--data", "builtin:toy"});
}

TEST_CASE("heads: every circuit method and the explorer on a pruned folder, pruned heads at their numbers",
          "[cli][heads][circuits][prune]") {
  ScratchDir dir;
  const std::string pruned = dir.file("p");
  run_ok({"prune", "--model", four_head_run(dir), "--heads", "0.1,1.2", "--out", pruned});
  const CliResult r = run_cli({"heads", "--model", pruned, "--text", "the cat sees the dog. the dog sees the cat.", "--composition", "--importance", "--patch",
                               "--counterfactual", "--epsilon", "0.1", "--prune-curve", "--ablate", "--json",
                               "--out", dir.file("pics"), "--html", dir.file("page.html")});
  INFO(r.describe());
  REQUIRE(r.exited_with(0));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["heads"].size() == 8);  // every original number, the pruned ones too
  CHECK(j["heads"][1]["role"] == "pruned");
  CHECK(j["heads"][6]["role"] == "pruned");
  CHECK_FALSE(j["heads"][1].contains("ablated_second_copy_ratio"));
  CHECK(j["heads"][2].contains("ablated_second_copy_ratio"));
  for (const char* key : {"importance", "patching", "counterfactual"}) {
    INFO(key);
    CHECK(j[key].size() == 6);
    CHECK_FALSE(has_head(j[key], 0, 1));
    CHECK_FALSE(has_head(j[key], 1, 2));
    CHECK(has_head(j[key], 1, 3));
  }
  REQUIRE(j["composition"].size() == 9);  // 3 writers x 3 readers
  for (const nlohmann::json& p : j["composition"]) {
    CHECK(p["from"] != nlohmann::json::array({0, 1}));
    CHECK(p["to"] != nlohmann::json::array({1, 2}));
  }
  CHECK(j["prune_curve"]["importance"]["loss"].size() == 7);
  // The circuits' pictures are of the report's set: its record names them.
  const std::string record = read_bytes(dir.file("pics/.tinygpt-heatmaps"));
  for (const char* png : {"composition.png", "patching.png", "patching_residual.png", "prune_curve.png",
                          "layer0_head1.png"}) {
    CHECK_THAT(record, Catch::Contains(png));
    CHECK(std::filesystem::exists(dir.file("pics/" + std::string(png))));
  }
  // The page: a pruned head's map at its own number attends nowhere, the arrows skip it.
  const nlohmann::json page = explorer_data(dir.file("page.html"));
  CHECK(page["attention"]["heads"] == 4);
  CHECK(page["composition"].size() == 4);
  const nlohmann::json roles = page["heads"];
  CHECK(roles[1]["role"] == "pruned");
}

// tests/cli/gpt2_forward.py: GPT-2's forward in PyTorch, each layer's head count from its c_attn.
TEST_CASE("prune: an independent PyTorch GPT-2 forward of the pruned folder gives tinygpt's loss",
          "[cli][prune]") {
  ScratchDir dir;
  const std::string pruned = dir.file("p");
  run_ok({"prune", "--model", four_head_run(dir), "--heads", "0.0,0.3,1.1", "--out", pruned});
  const std::string text = "the cat sat on a";  // 16 + 1 characters: one window of the context
  write_bytes(dir.file("text.txt"), text + "t");
  const nlohmann::json eval = nlohmann::json::parse(run_ok({"eval", "--model", pruned, "--data", dir.file("text.txt"),
                                                            "--split", "all", "--val-fraction", "0", "--json"}).out);
  REQUIRE(eval["tokens"] == 16);
  const std::string command = "/usr/bin/python3 " TINYGPT_SOURCE_DIR "/tests/cli/gpt2_forward.py --model '" +
                              pruned + "' --text '" + text + "t' 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  while (const size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    WARN("skipped: /usr/bin/python3 has no torch");
    return;
  }
  INFO(out);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const nlohmann::json torch = nlohmann::json::parse(out);
  CHECK(torch["layer_heads"] == nlohmann::json::array({2, 3}));
  CHECK(torch["loss"].get<double>() == Approx(eval["loss"].get<double>()).epsilon(1e-5));
}
