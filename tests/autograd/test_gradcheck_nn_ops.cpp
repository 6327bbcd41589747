// float64 gradient checks of the fused network ops: softmax family, masked_fill, embedding,
// cross_entropy, layer_norm, dropout and the fused causal self-attention.
#include <limits>

#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// (2, 3, 4) mask with a fully masked lane along every axis (so the all -inf path is checked
// whichever axis is normalised), and a few scattered masked elements.
Tensor mask_with_full_lanes() {
  Tensor m = Tensor::zeros({2, 3, 4}, DType::i64);
  int64_t* p = m.data<int64_t>();
  for (int64_t k = 0; k < 4; ++k) p[0 * 12 + 1 * 4 + k] = 1;  // x[0, 1, :]
  for (int64_t j = 0; j < 3; ++j) p[1 * 12 + j * 4 + 2] = 1;  // x[1, :, 2]
  p[0 * 12 + 0 * 4 + 3] = p[1 * 12 + 0 * 4 + 3] = 1;          // x[:, 0, 3]
  p[1 * 12 + 2 * 4 + 0] = 1;
  return m;
}

// log_softmax of a masked input, with the -inf outputs at masked places zeroed again so that
// the checked function stays finite.
Tensor masked_log_softmax(const Tensor& x, const Tensor& mask, int64_t axis) {
  return masked_fill(log_softmax(masked_fill(x, mask, -kInf), axis), mask, 0.0);
}

// Dropout whose mask is the same on every call: the generator is reseeded inside.
Tensor seeded_dropout(const Tensor& x, double p) {
  Generator gen(77);
  return dropout(x, p, /*training=*/true, gen);
}

// op(x, axis) on a (2, 3, 4) input for every axis, negative ones included.
void check_each_axis(Tensor (*op)(const Tensor&, int64_t), uint64_t seed) {
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    CAPTURE(axis);
    REQUIRE_GRADCHECK([=](const Inputs& in) { return op(in[0], axis); },
                      {leaf({2, 3, 4}, seed, 2.0)});
  }
}

}  // namespace

TEST_CASE("gradcheck softmax on each axis", "[gradcheck][ops]") { check_each_axis(softmax, 1); }

TEST_CASE("gradcheck softmax on each axis with a mask, fully masked lanes included",
          "[gradcheck][ops]") {
  const Tensor mask = mask_with_full_lanes();
  for (int64_t axis : {0, 1, 2}) {
    CAPTURE(axis);
    REQUIRE_GRADCHECK(
        [=](const Inputs& in) { return softmax(masked_fill(in[0], mask, -kInf), axis); },
        {leaf({2, 3, 4}, 2, 2.0)});
  }
}

TEST_CASE("gradcheck softmax axis 0 with a broadcast causal mask", "[gradcheck][ops]") {
  // (3, 3) upper triangle, broadcast over a (2, 3, 3) batch, normalised along axis 0.
  const Tensor causal = Tensor::from({0, 1, 1, 0, 0, 1, 0, 0, 0}, {3, 3}, DType::f32);
  REQUIRE_GRADCHECK(
      [=](const Inputs& in) { return softmax(masked_fill(in[0], causal, -kInf), 0); },
      {leaf({2, 3, 3}, 3)});
  REQUIRE_GRADCHECK(
      [=](const Inputs& in) { return softmax(masked_fill(in[0], causal, -kInf), -1); },
      {leaf({2, 3, 3}, 4)});
}

TEST_CASE("gradcheck log_softmax on each axis", "[gradcheck][ops]") {
  check_each_axis(log_softmax, 5);
}

TEST_CASE("gradcheck log_softmax on each axis with a mask, fully masked lanes included",
          "[gradcheck][ops]") {
  const Tensor mask = mask_with_full_lanes();
  for (int64_t axis : {0, 1, 2}) {
    CAPTURE(axis);
    REQUIRE_GRADCHECK([=](const Inputs& in) { return masked_log_softmax(in[0], mask, axis); },
                      {leaf({2, 3, 4}, 6, 2.0)});
  }
}

TEST_CASE("gradcheck masked_fill with masks of each dtype, broadcast", "[gradcheck][ops]") {
  const std::vector<double> pattern{1, 0, 0, 1};
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor mask = Tensor::from(pattern, {4}, dtype);
    REQUIRE_GRADCHECK([=](const Inputs& in) { return masked_fill(in[0], mask, 2.5); },
                      {leaf({3, 4}, 7)});
  }
  const Tensor column = Tensor::from({0, 1, 0}, {3, 1}, DType::i64);
  REQUIRE_GRADCHECK([=](const Inputs& in) { return masked_fill(in[0], column, -1.0); },
                    {leaf({2, 3, 4}, 8)});
  const Tensor full = Tensor::from({0, 1, 1, 0, 1, 0}, {2, 3}, DType::f64);
  REQUIRE_GRADCHECK([=](const Inputs& in) { return masked_fill(in[0] * in[0], full, 0.0); },
                    {leaf({2, 3}, 9)});
}

TEST_CASE("gradcheck embedding with repeated ids and 2-D ids", "[gradcheck][ops]") {
  const Tensor ids = Tensor::from_ids({3, 1, 3, 0, 3, 1}, {2, 3});
  REQUIRE_GRADCHECK([=](const Inputs& in) { return embedding(in[0], ids); }, {leaf({5, 4}, 10)});
  const Tensor single = Tensor::from_ids({2}, {});
  REQUIRE_GRADCHECK([=](const Inputs& in) { return embedding(in[0], single); },
                    {leaf({3, 2}, 11)});
}

TEST_CASE("gradcheck cross_entropy with ignore_index present", "[gradcheck][ops]") {
  const Tensor targets = Tensor::from_ids({2, -100, 0, 4, 4, -100}, {6});
  REQUIRE_GRADCHECK([=](const Inputs& in) { return cross_entropy(in[0], targets); },
                    {leaf({6, 5}, 12, 2.0)});
}

TEST_CASE("gradcheck cross_entropy on 3-D logits with a custom ignore_index", "[gradcheck][ops]") {
  const Tensor targets = Tensor::from_ids({1, 0, 3, 2, 3, 1}, {2, 3});
  REQUIRE_GRADCHECK([=](const Inputs& in) { return cross_entropy(in[0], targets, 3); },
                    {leaf({2, 3, 4}, 13)});
  REQUIRE_GRADCHECK([=](const Inputs& in) { return cross_entropy(in[0], targets, -1) * 3.0; },
                    {leaf({2, 3, 4}, 14)});
}

TEST_CASE("gradcheck layer_norm with and without weight and bias", "[gradcheck][ops]") {
  for (bool with_weight : {true, false}) {
    for (bool with_bias : {true, false}) {
      CAPTURE(with_weight, with_bias);
      REQUIRE_GRADCHECK(
          [=](const Inputs& in) {
            return layer_norm(in[0], with_weight ? in[1] : Tensor{}, with_bias ? in[2] : Tensor{});
          },
          {leaf({2, 3, 5}, 15, 2.0), leaf({5}, 16), leaf({5}, 17)});
    }
  }
}

TEST_CASE("gradcheck layer_norm with a large eps and a weight that needs no grad",
          "[gradcheck][ops]") {
  const Tensor weight = Tensor::from({0.5, -1.0, 2.0}, {3}, DType::f64);
  REQUIRE_GRADCHECK([=](const Inputs& in) { return layer_norm(in[0], weight, in[1], 0.3); },
                    {leaf({4, 3}, 18), leaf({3}, 19)});
}

TEST_CASE("gradcheck dropout with the generator reseeded inside", "[gradcheck][ops]") {
  for (double p : {0.1, 0.5, 0.9}) {
    CAPTURE(p);
    REQUIRE_GRADCHECK([p](const Inputs& in) { return seeded_dropout(in[0], p); },
                      {leaf({4, 6}, 20)});
  }
}

TEST_CASE("gradcheck a tiny attention block end to end", "[gradcheck][ops]") {
  // softmax(mask(q k^T / sqrt(d))) v, then layer_norm and a loss, as a transformer block does.
  const Tensor causal = Tensor::from({0, 1, 1, 0, 0, 1, 0, 0, 0}, {3, 3}, DType::i64);
  const Tensor targets = Tensor::from_ids({1, 0, 3, 2, -100, 1}, {2, 3});
  REQUIRE_GRADCHECK(
      [=](const Inputs& in) {
        const Tensor scores = matmul(in[0], in[1], false, true) * 0.5;  // (2, 3, 3)
        const Tensor attn = softmax(masked_fill(scores, causal, -kInf), -1);
        const Tensor h = layer_norm(matmul(attn, in[2]), in[3], Tensor{});  // (2, 3, 4)
        return cross_entropy(h, targets);
      },
      {leaf({2, 3, 4}, 21), leaf({2, 3, 4}, 22), leaf({2, 3, 4}, 23), leaf({4}, 24)});
}

TEST_CASE("gradcheck fused causal_self_attention on packed qkv", "[gradcheck][ops][attention]") {
  REQUIRE_GRADCHECK(
      [](const std::vector<Tensor>& in) { return causal_self_attention(in[0], 2); },
      {leaf({2, 5, 12}, 8)});
}
