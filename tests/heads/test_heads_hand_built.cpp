// Formation records, ablation and attribution on a hand-built model whose heads are known.
#include <cmath>

#include <catch2/catch.hpp>

#include "heads/hand_built.hpp"
#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/attribution.hpp"
#include "tinygpt/heads/formation.hpp"

using namespace tinygpt;

namespace {

heads::HeadProbes probes() {
  heads::HeadProbes p;
  p.texts = {{1, 2, 3, 4, 5, 6, 7, 8}, {3, 1, 4, 1, 5, 9, 2, 6}};
  for (int64_t id = 0; id < 12; ++id) p.alphabet.push_back(id);
  p.num_random = 4;
  return p;
}

}  // namespace

TEST_CASE("hand-built: head 0 attends to the previous token exactly", "[heads][hand]") {
  auto model = testing::previous_token_model();
  const auto maps = heads::attention_maps(*model, {1, 2, 3, 4, 5, 6, 7, 8});
  for (int64_t i = 1; i < 8; ++i) CHECK(maps[0].at({0, i, i - 1}) > 0.999);
  CHECK(maps[0].at({1, 5, 0}) == Approx(1.0 / 6.0).epsilon(1e-4));  // head 1: uniform
}

TEST_CASE("formation record: heads with every score and the in-context line", "[heads][formation]") {
  auto model = testing::previous_token_model();
  const nlohmann::json record = heads::formation_record(*model, probes());
  REQUIRE(record["heads"].size() == 2);
  CHECK(record["heads"][0]["role"] == "previous-token");
  CHECK(record["heads"][0]["previous_token"].get<double>() > 0.99);
  CHECK(record["heads"][1]["entropy"].get<double>() > 0.99);  // uniform over the past
  for (const char* key : {"layer", "head", "role", "previous_token", "induction", "duplicate_token",
                          "first_token", "current_token", "local", "entropy"}) {
    CHECK(record["heads"][1].contains(key));
  }
  const auto& ic = record["in_context"];
  CHECK(ic["ratio"].get<double>() ==
        Approx(ic["second_copy_loss"].get<double>() / ic["first_copy_loss"].get<double>()));

  // Three evaluations: the head reaches its role at the second.
  std::vector<nlohmann::json> log = {{{"step", 1}, {"loss", 3.0}}};
  for (int step : {100, 200, 300}) {
    nlohmann::json r = record;
    r["step"] = step;
    r["heads"][0]["previous_token"] = step == 100 ? 0.1 : 0.9;
    r["heads"][1]["previous_token"] = 0.0;
    log.push_back(r);
  }
  const heads::FormationSeries s = heads::formation_series(log);
  REQUIRE(s.previous_token.size() == 1);
  REQUIRE(s.previous_token[0].size() == 3);
  CHECK(s.previous_token[0][0].value == Approx(0.1));
  REQUIRE(s.formed.size() == 1);
  CHECK(s.formed[0].role == "previous-token");
  CHECK(s.formed[0].step == 200);
  CHECK(heads::first_step_reaching(s.previous_token[0], 0.5) == 200);
  CHECK(std::isnan(heads::first_step_reaching(s.previous_token[0], 0.95)));
}

TEST_CASE("formation series: a score logged as null (a NaN) counts as none", "[heads][formation]") {
  const auto record = [](int step, const nlohmann::json& score) {
    return nlohmann::json{{"step", step},
                          {"heads", {{{"layer", 0}, {"head", 0}, {"role", "previous-token"},
                                      {"previous_token", score}, {"induction", score}}}},
                          {"in_context", {{"ratio", score}}}};
  };
  const heads::FormationSeries s = heads::formation_series({record(100, nullptr), record(200, 0.9)});
  REQUIRE(s.previous_token.size() == 1);
  REQUIRE(s.previous_token[0].size() == 2);
  CHECK(s.previous_token[0][0].value == 0.0);
  CHECK(s.previous_token[0][1].value == Approx(0.9));
  CHECK(s.induction[0].value == 0.0);
  CHECK(std::isnan(s.in_context_ratio[0].value));
  REQUIRE(s.formed.size() == 1);
  CHECK(s.formed[0].step == 200);
  CHECK(heads::number_or({{"a", nullptr}}, "a", -1.0) == -1.0);
  CHECK(heads::number_or({{"a", "x"}}, "a", -1.0) == -1.0);
  CHECK(heads::number_or({{"a", 2.5}}, "a", -1.0) == 2.5);
  CHECK(heads::number_or(nlohmann::json::object(), "a", -1.0) == -1.0);
}

TEST_CASE("ablation: zero removes a head's output exactly, mean leaves its average",
          "[heads][ablation]") {
  auto model = testing::previous_token_model();
  heads::HeadAblation zero(*model, probes(), heads::AblationMode::zero);
  const auto each = heads::ablate_each_head(zero);
  REQUIRE(each.heads.size() == 2);
  // Removing both heads equals a model whose c_proj is zero.
  const heads::AblationResult both = zero.run({{0, 0}, {0, 1}});
  auto cut = testing::previous_token_model();
  (*cut->transformer->h)[0].attn->c_proj->weight.fill_(0.0);
  heads::HeadAblation intact_cut(*cut, probes(), heads::AblationMode::zero);
  CHECK(both.text_loss == Approx(intact_cut.baseline().text_loss).epsilon(1e-6));
  CHECK(both.second_copy_ratio == Approx(intact_cut.baseline().second_copy_ratio).epsilon(1e-6));
  CHECK(each.heads[0].text_loss != Approx(zero.baseline().text_loss));
  const nlohmann::json list = each.heads_json(heads::analyze_heads(*model, probes()));
  CHECK(list[0]["ablated_loss_delta"].get<double>() ==
        Approx(each.heads[0].text_loss - each.baseline.text_loss));
  CHECK(list[1].contains("ablated_second_copy_ratio"));
  // The model is left without hooks: its intact measure is unchanged.
  CHECK(heads::HeadAblation(*model, probes(), heads::AblationMode::zero).baseline().text_loss ==
        Approx(zero.baseline().text_loss));
  heads::HeadAblation mean(*model, probes(), heads::AblationMode::mean);
  CHECK(mean.run({{0, 1}}).text_loss != Approx(both.text_loss));
}

TEST_CASE("ablation: head lists and modes are parsed strictly", "[heads][ablation]") {
  const auto list = heads::parse_head_list("0.1,1.7", 2, 8);
  REQUIRE(list.size() == 2);
  CHECK(list[1].layer == 1);
  CHECK(list[1].head == 7);
  CHECK(heads::head_list_str(list) == "0.1,1.7");
  CHECK_THROWS_WITH(heads::parse_head_list("2.0", 2, 8), Catch::Contains("2.0") && Catch::Contains("2 layers"));
  CHECK_THROWS_WITH(heads::parse_head_list("0.1,0.1", 2, 8), Catch::Contains("twice"));
  CHECK_THROWS_WITH(heads::parse_head_list("01x", 2, 8), Catch::Contains("LAYER.HEAD"));
  CHECK_THROWS_WITH(heads::parse_head_list("", 2, 8), Catch::Contains("names no head"));
  // Each message says it is about the head list, once (the CLI puts the flag's name before it).
  for (const char* bad : {"2.0", "0.1,0.1", "01x", ""}) {
    CHECK_THROWS_WITH(heads::parse_head_list(bad, 2, 8),
                      Catch::Contains("head list") && !Catch::Contains("head list:"));
  }
  CHECK_THROWS_AS(heads::parse_ablation_mode("half"), ValueError);
  CHECK(heads::parse_ablation_mode("mean") == heads::AblationMode::mean);
}

TEST_CASE("attribution: rollout of known maps, Spearman with ties", "[heads][attribution]") {
  // One layer, one head, every query on the previous token: A' = 0.5 A + 0.5 I.
  std::vector<double> a(16, 0.0);
  a[0] = 1.0;
  for (int i = 1; i < 4; ++i) a[static_cast<size_t>(i * 4 + i - 1)] = 1.0;
  const Tensor map = Tensor::from(a, {1, 4, 4});
  const auto one = heads::attention_rollout({map}, 3);
  CHECK(one == std::vector<double>{0.0, 0.0, 0.5, 0.5});
  const auto two = heads::attention_rollout({map, map}, 3);  // binomial: 1/4, 1/2, 1/4
  CHECK(two[1] == Approx(0.25));
  CHECK(two[2] == Approx(0.5));
  CHECK(two[3] == Approx(0.25));
  CHECK(heads::spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1.0));
  CHECK(heads::spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1.0));
  CHECK(heads::spearman({1, 1, 2}, {1, 1, 2}) == Approx(1.0));
  CHECK(std::isnan(heads::spearman({1, 1}, {1, 2})));
  CHECK_THROWS_AS(heads::spearman({1}, {1, 2}), ShapeError);
}

TEST_CASE("attribution: the previous-token head's layer points at i-1, gradients respect causality",
          "[heads][attribution]") {
  auto model = testing::previous_token_model();
  const std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6};
  const heads::Attribution a = heads::attribute(*model, ids, 4);
  REQUIRE(a.attention.size() == 1);
  REQUIRE(a.grad_x_input.size() == 5);
  // Head 0 puts all on 3, head 1 spreads 1/5 over 0..4: the mean over heads.
  CHECK(a.attention[0][3] == Approx(0.5 + 0.1).epsilon(1e-3));
  CHECK(a.target_is_next);
  CHECK(a.target == 6);
  double total = 0.0;
  for (double g : a.grad_x_input) total += g;
  CHECK(total == Approx(1.0));
  CHECK_THROWS_AS(heads::attribute(*model, ids, 6), IndexError);
  // The last position attributes the model's own top guess.
  CHECK_FALSE(heads::attribute(*model, ids, 5).target_is_next);
}
