// Activation patching on a small random model: what the experiment's design fixes exactly.
#include <catch2/catch.hpp>

#include "nn/nn_helpers.hpp"
#include "tinygpt/heads/patching.hpp"

using namespace tinygpt;

namespace {

heads::HeadProbes repeated_probes() {
  heads::HeadProbes p;
  for (int64_t id = 0; id < 11; ++id) p.alphabet.push_back(id);
  p.texts = {{1, 2, 3, 4, 5, 6, 7, 8}};
  p.num_random = 4;
  return p;
}

// Head 0.0 called previous-token and 1.1 induction, whatever they do.
heads::HeadReport fake_roles() {
  heads::HeadReport report;
  for (int64_t layer = 0; layer < 2; ++layer) {
    for (int64_t head = 0; head < 2; ++head) {
      heads::HeadScores s;
      s.layer = layer;
      s.head = head;
      s.role = layer == 0 && head == 0 ? "previous-token" : (layer == 1 && head == 1 ? "induction" : "diffuse");
      report.heads.push_back(s);
    }
  }
  return report;
}

}  // namespace

TEST_CASE("patching: positions both runs share recover nothing, one head of a role is the role",
          "[heads][patching]") {
  nn::GPT model(testing::tiny_config(2), 4);
  testing::scramble(model, 7, 0.5);
  const heads::PatchingReport r = heads::patch_heads(model, repeated_probes(), fake_roles());
  CHECK(r.period == 4);
  CHECK(r.clean_metric != r.corrupted_metric);
  REQUIRE(r.heads.size() == 4);
  REQUIRE(r.residual.size() == 3 * 8);  // before each layer and after the last, 8 bands of 1
  for (const heads::ResidualRecovery& x : r.residual) {
    INFO("layer " << x.layer << " positions " << x.first);
    // The second copies are the same tokens, so the first block's input there is the same; after
    // the last block the first copy's positions no longer reach the second copy's predictions.
    if (x.layer == 0 && x.first >= 4) CHECK(x.recovery == Approx(0.0).margin(1e-6));
    if (x.layer == 2 && x.first < 4) CHECK(x.recovery == Approx(0.0).margin(1e-6));
  }
  REQUIRE(r.roles.size() == 2);
  CHECK(r.roles[1].recovery == Approx(r.heads[3].recovery));
  REQUIRE(r.paths.size() == 3);
  CHECK(r.paths[1].input == heads::PathInput::k);
  const nlohmann::json json = r.json();
  CHECK(json["patching"][3]["recovery"].get<double>() == Approx(r.heads[3].recovery));
  CHECK(json["path_patching"][1]["input"] == "k");
  CHECK(json["residual_patching"][0]["positions"] == nlohmann::json::array({0, 1}));
}

TEST_CASE("path patching: a writer whose output is the same in both runs recovers nothing",
          "[heads][patching]") {
  nn::GPT model(testing::tiny_config(2), 4);
  testing::scramble(model, 7, 0.5);
  // Head 0.0's values are zero in both runs, so the clean difference it writes is zero and the
  // queries, keys and values recomputed from the block's input must equal the forward's own.
  auto& attn = *(*model.transformer->h)[0].attn;
  std::vector<double> w = attn.c_attn->weight.to_vector();  // (8, 24): v of head 0 in columns 16..19
  std::vector<double> b = attn.c_attn->bias.to_vector();
  for (int i = 0; i < 8; ++i) {
    for (int j = 16; j < 20; ++j) w[static_cast<size_t>(i * 24 + j)] = 0.0;
  }
  for (int j = 16; j < 20; ++j) b[static_cast<size_t>(j)] = 0.0;
  attn.c_attn->weight.copy_(Tensor::from(w, {8, 24}));
  attn.c_attn->bias.copy_(Tensor::from(b, {24}));
  const heads::PatchingReport r = heads::patch_heads(model, repeated_probes(), fake_roles());
  REQUIRE(r.paths.size() == 3);
  for (const heads::PathRecovery& p : r.paths) CHECK(p.recovery == Approx(0.0).margin(1e-6));
}
