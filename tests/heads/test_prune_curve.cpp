// The pruning curves: every order starts from the intact model and ends with every head gone.
#include <catch2/catch.hpp>

#include "heads/hand_built.hpp"
#include "tinygpt/heads/prune_curve.hpp"

using namespace tinygpt;

TEST_CASE("prune curves: three orders of every head, from the intact model to none left",
          "[heads][prune]") {
  auto model = testing::previous_token_model();
  heads::HeadProbes probes;
  probes.texts = {{1, 2, 3, 4, 5, 6, 7, 8}};
  for (int64_t id = 0; id < 12; ++id) probes.alphabet.push_back(id);
  probes.num_random = 4;
  heads::HeadAblation ablation(*model, probes, heads::AblationMode::zero);
  const auto importance = heads::head_importance(*model, probes.texts);
  const auto each = ablation.each_head();
  const std::vector<heads::PruneCurve> curves = heads::prune_curves(ablation, importance, each, 3);
  REQUIRE(curves.size() == 3);
  const heads::AblationResult none = ablation.run({{0, 0}, {0, 1}});
  for (const heads::PruneCurve& c : curves) {
    REQUIRE(c.loss.size() == 3);
    REQUIRE(c.removed.size() == 2);
    CHECK(c.loss[0] == Approx(ablation.baseline().text_loss));
    CHECK(c.loss[2] == Approx(none.text_loss));
    CHECK(c.second_copy_ratio[2] == Approx(none.second_copy_ratio));
  }
  // The ablation order removes first the head whose own removal costs less.
  const bool head0_cheaper = each[0].text_loss < each[1].text_loss;
  CHECK(curves[1].removed[0] == heads::HeadRef{0, head0_cheaper ? 0 : 1});
  const nlohmann::json json = heads::prune_curves_json(curves);
  CHECK(json["random"]["loss"].size() == 3);
  CHECK(json["importance"]["removed"].size() == 2);
  const std::vector<heads::OutputChange> changes = heads::output_change_per_head(*model, probes.texts);
  REQUIRE(changes.size() == 2);
  CHECK(changes[0].l2 > 0.0);  // v = x and c_proj passes z through: either head's removal shows
  CHECK(heads::output_change_json(changes)[1]["head"] == 1);
  heads::HeadAblation mean_mode(*model, probes, heads::AblationMode::mean);
  CHECK_THROWS_AS(heads::prune_curves(mean_mode, importance, each), ValueError);
}
