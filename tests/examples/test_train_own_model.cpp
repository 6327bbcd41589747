// examples/own_model/train_own_model end to end: a model the library does not have, trained by
// the library's run, resumes byte-identical to an uninterrupted run, keeps its log and draws its head report. Its runs go
// to a scratch folder under build/.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_helpers.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

const char* const kProgram = TINYGPT_BINARY_DIR "/examples/train_own_model";

CliResult train_own_model(const std::vector<std::string>& args) {
  CliOptions options;
  options.program = kProgram;
  options.timeout = std::chrono::minutes(5);
  CliResult r = run_cli(args, options);
  INFO(r.describe());
  REQUIRE(r.exited_with(0));
  return r;
}

const char* const kScratch = TINYGPT_BINARY_DIR "/tests/examples-scratch";

}  // namespace

TEST_CASE("train_own_model: 20 steps in one go, and 10 then resumed to 20, are byte-identical",
          "[examples][own-llama][resume]") {
  ScratchDir dir(kScratch);
  const std::string whole = dir.file("whole"), halves = dir.file("halves");
  train_own_model({"--out", whole, "--steps", "20"});
  train_own_model({"--out", halves, "--steps", "10"});
  CHECK(saved_step(halves) == 10);
  train_own_model({"--out", halves, "--steps", "20", "--resume"});
  CHECK(saved_step(halves) == 20);
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json",
                           "tokenizer.json", "trainer_state.json"}) {
    INFO(file);
    CHECK(read_bytes(whole + "/" + file) == read_bytes(halves + "/" + file));
  }
  CHECK(log_without_timing(whole) == log_without_timing(halves));
}

TEST_CASE("train_own_model's run has its log, an own-llama config.json, head heatmaps and report.html", "[examples][own-llama]") {
  ScratchDir dir(kScratch);
  const std::string run = dir.file("run");
  train_own_model({"--out", run, "--steps", "20"});
  int train_records = 0, eval_records = 0;
  for (const json& record : log_without_timing(run)) {
    train_records += record.contains("loss") ? 1 : 0;
    eval_records += record.contains("val_loss") ? 1 : 0;
  }
  CHECK(train_records == 20);
  CHECK(eval_records == 2);  // every 10 steps
  const json config = json::parse(read_bytes(run + "/config.json"));
  CHECK(config.at("model_type") == "own-llama");
  CHECK(config.at("n_layer") == 2);
  CHECK(config.at("n_head") == 4);
  // The head report: a heatmap per head of each layer, a grid per layer, the explorer page.
  for (const char* picture : {"layer0.png", "layer1.png", "layer0_head0.png", "layer1_head3.png"}) {
    INFO(picture);
    CHECK(std::filesystem::exists(run + "/heads/" + picture));
  }
  CHECK(std::filesystem::exists(run + "/report.html"));
}

TEST_CASE("docs/DESIGN.md shows train_own_model's user code as the example has it", "[examples][docs]") {
  const std::string doc = read_bytes(TINYGPT_SOURCE_DIR "/docs/DESIGN.md");
  const size_t section = doc.find("### Your own model");
  REQUIRE(section != std::string::npos);
  const std::string fence = "```cpp\n";
  const size_t begin = doc.find(fence, section) + fence.size();
  const std::string snippet = doc.substr(begin, doc.find("```", begin) - begin);
  REQUIRE(snippet.find("train::fit(run") != std::string::npos);
  const std::string example = read_bytes(TINYGPT_SOURCE_DIR "/examples/own_model/train_own_model.cpp");
  CHECK(example.find(snippet) != std::string::npos);
}
