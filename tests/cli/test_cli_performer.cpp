// tinygpt train --attention performer --features M --redraw-every N: config.json's keys, the
// features saved in model.safetensors, sample/heads/eval on such a run, a resumed run
// byte-identical to an uninterrupted one across redraws, and the refusals in flag terms.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

TEST_CASE("train --attention performer: config.json, features saved, sample, heads, eval",
          "[cli][performer]") {
  ScratchDir dir;
  const std::string model = dir.file("performer");
  train_tiny_model(model, {"--attention", "performer", "--features", "8", "--redraw-every", "4",
                           "--pos", "none"});
  const json config = json::parse(read_bytes(model + "/config.json"));
  CHECK(config.at("attention_type") == "performer");
  CHECK(config.at("performer_features") == 8);
  CHECK(config.at("performer_redraw_every") == 4);
  CHECK(read_bytes(model + "/model.safetensors").find("attn.performer_features") != std::string::npos);
  // 1 layer x 2 kv heads x (8 x 8 + 8) x 4 bytes
  CHECK_THAT(run_ok({"sample", "--model", model, "--tokens", "5", "--verbose"}).err,
             Catch::Matchers::Contains("performer 8 features") &&
                 Catch::Matchers::Contains("recurrent state: 576 bytes"));
  run_ok({"heads", "--model", model});
  run_ok({"eval", "--model", model, "--json"});
}

TEST_CASE("a resumed Performer run equals an uninterrupted one, redraws included",
          "[cli][performer][slow]") {
  ScratchDir dir;
  const std::vector<std::string> flags = {"--attention", "performer", "--features", "6",
                                          "--redraw-every", "3"};
  const std::string straight = dir.file("straight"), resumed = dir.file("resumed");
  run_ok(tiny_train_args(straight, flags));
  std::vector<std::string> half = flags;
  half.insert(half.end(), {"--steps", "10"});
  run_ok(tiny_train_args(resumed, half));
  CHECK(read_bytes(resumed + "/model.safetensors") != read_bytes(straight + "/model.safetensors"));
  run_ok({"train", "--resume", resumed, "--steps", "20"});
  CHECK(saved_step(resumed) == 20);
  CHECK(read_bytes(resumed + "/model.safetensors") == read_bytes(straight + "/model.safetensors"));
}

TEST_CASE("performer flags refused in flag terms", "[cli][performer][errors]") {
  ScratchDir dir;
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"--attention", "performer", "--features", "0"}, {"--features 0", "random feature"}},
      {{"--attention", "performer", "--redraw-every", "-2"}, {"--redraw-every -2", ">= 0"}},
      {{"--attention", "linear", "--features", "8"}, {"--features needs --attention performer"}},
      {{"--redraw-every", "8"}, {"--redraw-every needs --attention performer"}},
      {{"--attention", "performer", "--pos", "rope"}, {"linear attention", "rope"}}};
  for (const auto& [changes, fragments] : cases) {
    CAPTURE(changes);
    const CliResult refused = run_cli(tiny_train_args(dir.file("bad"), changes));
    check_one_line_error(refused, fragments);
    CHECK(refused.exited_with(2));
  }
}
