// tinygpt heads on an encoder: its explorer page (bidirectional, its specials shown as tokens) and
// the [MASK] view, in the page and as pictures and JSON from --mask-view. The page in a browser is
// tests/browser/explorer_test.js's.
#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kMaskedText = "the c[MASK]t s[MASK]t";

void train_tiny_encoder(const std::string& out) {
  run_ok({"train", "--arch", "encoder", "--out", out, "--layers", "1", "--heads", "2", "--d-model", "16",
          "--block", "16", "--steps", "10", "--eval-every", "10", "--batch", "4", "--eval-iters", "1",
          "--threads", "1"});
}

}  // namespace

TEST_CASE("heads --mask-view draws and gives every head's row from each [MASK], and --html has the view",
          "[cli][encoder][heads]") {
  ScratchDir dir;
  const std::string model = dir.file("model"), pictures = dir.file("mask-view"), page = dir.file("page.html");
  train_tiny_encoder(model);
  const json report = json::parse(run_ok({"heads", "--model", model, "--text", kMaskedText, "--mask-view", pictures,
                                          "--html", page, "--json", "--threads", "1"}).out);
  const json& view = report.at("mask_view");
  const json& tokens = view.at("tokens");
  REQUIRE(tokens.size() == 13);  // the text's 11 tokens framed
  CHECK(tokens.front() == "[CLS]");
  CHECK(tokens.back() == "[SEP]");
  REQUIRE(view.at("masks").size() == 2);
  const json fill = json::parse(run_ok({"fill", "--model", model, "--text", kMaskedText, "--json"}).out);
  for (size_t k = 0; k < 2; ++k) {
    const json& mask = view.at("masks").at(k);
    CHECK(mask.at("position") == fill.at("masks").at(k).at("position"));  // counted as fill counts
    CHECK(mask.at("query") == mask.at("position").get<int64_t>() + 1);
    CHECK(tokens.at(mask.at("query").get<size_t>()) == "[MASK]");
    CHECK(mask.at("top") == fill.at("masks").at(k).at("top"));
    REQUIRE(mask.at("heads").size() == 2);
    for (const json& head : mask.at("heads")) {
      CHECK(head.at("layer") == 0);
      REQUIRE(head.at("row").size() == tokens.size());
      double sum = 0.0;
      for (const json& w : head.at("row")) sum += w.get<double>();
      CHECK(sum == Approx(1.0).margin(1e-5));
    }
    CHECK(fs::file_size(pictures + "/mask_" + std::to_string(mask.at("position").get<int64_t>()) + ".png") > 0);
  }
  const std::string html = read_bytes(page);
  CHECK_THAT(html, Catch::Contains("\"causal\":false"));
  CHECK_THAT(html, Catch::Contains("\"masks\":[{\"position\":6,"));
  CHECK_THAT(html, Catch::Contains("\"[CLS]\""));

  const std::string text = run_ok({"heads", "--model", model, "--text", kMaskedText, "--mask-view", pictures,
                                   "--threads", "1"}).out;
  CHECK_THAT(text, Catch::Contains("[MASK] view: " + pictures + "/mask_5.png, " + pictures + "/mask_9.png"));

  // Without --text the page masks every seventh character of the run's own text.
  const std::string plain = dir.file("plain.html");
  CHECK_FALSE(json::parse(run_ok({"heads", "--model", model, "--html", plain, "--json", "--threads", "1"}).out)
                  .contains("mask_view"));
  CHECK_THAT(read_bytes(plain), Catch::Contains("\"masks\":[{\"position\":4,"));
}

TEST_CASE("heads --mask-view refuses a text without [MASK], no text, and a model that is no encoder",
          "[cli][encoder][heads][errors]") {
  ScratchDir dir;
  const std::string model = dir.file("model"), gpt = dir.file("gpt"), pictures = dir.file("mask-view");
  train_tiny_encoder(model);
  train_tiny_model(gpt);
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> refused = {
      {{"heads", "--model", model, "--mask-view", pictures}, {"--mask-view", "give it with --text"}},
      {{"heads", "--model", model, "--mask-view", pictures, "--text", "the cat"}, {"--text: has no [MASK]", "--mask-view"}},
      {{"heads", "--model", gpt, "--mask-view", pictures, "--text", "a[MASK]"}, {"--mask-view", "the [MASK] view is an encoder's"}}};
  for (const auto& [args, message] : refused) {
    const CliResult r = run_cli(args);
    check_one_line_error(r, message);
    CHECK(r.exited_with(2));
  }
  CHECK_FALSE(fs::exists(pictures));
}
