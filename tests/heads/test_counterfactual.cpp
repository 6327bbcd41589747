// Attention's counterfactuals on the hand-built model: head 1 already attends uniformly, so
// neither the uniform nor a permuted pattern changes anything; head 0's previous-token pattern
// cannot be replaced for free.
#include <cmath>

#include <catch2/catch.hpp>

#include "heads/hand_built.hpp"
#include "tinygpt/heads/counterfactual.hpp"

using namespace tinygpt;

TEST_CASE("counterfactual: a uniform head's pattern is its own uniform and permutation",
          "[heads][counterfactual]") {
  auto model = testing::previous_token_model();
  const std::vector<std::vector<int64_t>> windows = {{1, 2, 3, 4, 5, 6, 7, 8}, {3, 1, 4, 1, 5, 9, 2, 6}};
  heads::CounterfactualOptions options;
  options.steps = 10;
  const std::vector<heads::HeadCounterfactual> r = heads::attention_counterfactuals(*model, windows, options);
  REQUIRE(r.size() == 2);
  CHECK(r[1].head == heads::HeadRef{0, 1});
  CHECK(r[1].uniform_tvd == Approx(0.0).margin(1e-6));
  CHECK(r[1].permuted_tvd == Approx(0.0).margin(1e-6));
  CHECK(r[0].uniform_tvd > 0.01);
  CHECK(r[0].permuted_tvd > 1e-4);
  for (const heads::HeadCounterfactual& h : r) {
    CHECK(h.adversarial_jsd >= 0.0);
    CHECK(h.adversarial_jsd <= std::log(2.0) + 1e-9);
  }
  const nlohmann::json json = heads::counterfactual_json(r);
  CHECK(json[1]["head"] == 1);
  CHECK(json[0].contains("adversarial_jsd"));
  options.epsilon = 0.0;
  CHECK_THROWS_AS(heads::attention_counterfactuals(*model, windows, options), ValueError);
}
