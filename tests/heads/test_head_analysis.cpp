#include <memory>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "nn/nn_helpers.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/heads/head_analysis.hpp"

using namespace tinygpt;

namespace {

std::unique_ptr<nn::GPT> small_model(int64_t block) {
  nn::GPTConfig config = testing::tiny_config();
  config.vocab_size = 40;
  config.block_size = block;
  return std::make_unique<nn::GPT>(config, 7);
}

heads::HeadProbes probes_with_alphabet(int64_t letters) {
  heads::HeadProbes probes;
  probes.texts = {std::vector<int64_t>(16, 3)};
  for (int64_t id = 0; id < letters; ++id) probes.alphabet.push_back(id);
  probes.num_random = 2;
  return probes;
}

}  // namespace

TEST_CASE("head analysis: the repeated copies are as long as context, 32 and the alphabet allow",
          "[heads]") {
  auto model = small_model(64);
  CHECK(heads::analyze_heads(*model, probes_with_alphabet(40)).period == 32);
  CHECK(heads::analyze_heads(*model, probes_with_alphabet(26)).period == 26);  // no token twice
  auto short_model = small_model(20);
  CHECK(heads::analyze_heads(*short_model, probes_with_alphabet(40)).period == 10);
}

TEST_CASE("head analysis: a copy longer than the alphabet is refused, naming both", "[heads]") {
  auto model = small_model(64);
  heads::HeadProbes probes = probes_with_alphabet(5);
  probes.period = 6;
  CHECK_THROWS_WITH(heads::analyze_heads(*model, probes),
                    Catch::Contains("period 6") && Catch::Contains("alphabet has 5"));
}

TEST_CASE("head analysis: one score set per head, in layer then head order", "[heads]") {
  auto model = small_model(32);
  const heads::HeadReport report = heads::analyze_heads(*model, probes_with_alphabet(26));
  REQUIRE(report.heads.size() == 4);
  const auto list = nlohmann::json::parse(report.json());
  REQUIRE(list.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(list[i]["layer"] == static_cast<int64_t>(i / 2));
    CHECK(list[i]["head"] == static_cast<int64_t>(i % 2));
    for (const char* key : {"previous_token", "induction", "duplicate_token", "first_token",
                            "current_token", "local", "entropy"}) {
      CHECK(list[i][key].get<double>() >= 0.0);
      CHECK(list[i][key].get<double>() <= 1.0 + 1e-6);
    }
  }
  CHECK(report.first_copy_loss > 0.0);
  CHECK(report.second_copy_loss > 0.0);
}
