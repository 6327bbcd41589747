// The ops behind the attention variants: RoPE's rotation (Hugging Face "rotate half"), ALiBi's
// slopes and bias, grouped-query attention's head sharing, and the fused causal kernel with
// shared key/value heads and ALiBi. Values against the conventions, and float64 gradient checks.
#include <cmath>

#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

TEST_CASE("rotary_embedding rotates i with i + d/2 by pos * theta^(-2i/d), leaving the rest",
          "[ops][rope]") {
  // (1,T=3,W=10): two heads of width 4 rotated, two trailing columns copied.
  Generator gen(3);
  const Tensor x = Tensor::randn({1, 3, 10}, gen, DType::f64);
  const int64_t offset = 5;
  const Tensor y = rotary_embedding(x, 4, 8, offset, 10000.0);
  const double* in = x.data<double>();
  const double* out = y.data<double>();
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t head = 0; head < 2; ++head) {
      for (int64_t i = 0; i < 2; ++i) {
        // Hugging Face: q * cos + rotate_half(q) * sin, cos/sin of cat(freqs, freqs).
        const double a = static_cast<double>(offset + t) * std::pow(10000.0, -2.0 * i / 4.0);
        const int64_t lo = t * 10 + head * 4 + i, hi = lo + 2;
        CHECK(out[lo] == Approx(in[lo] * std::cos(a) - in[hi] * std::sin(a)).epsilon(1e-14));
        CHECK(out[hi] == Approx(in[hi] * std::cos(a) + in[lo] * std::sin(a)).epsilon(1e-14));
      }
    }
    CHECK(out[t * 10 + 8] == in[t * 10 + 8]);
    CHECK(out[t * 10 + 9] == in[t * 10 + 9]);
  }
}

TEST_CASE("rotary scores depend on the offset between positions only", "[ops][rope]") {
  Generator gen(4);
  const Tensor q = Tensor::randn({1, 1, 8}, gen, DType::f64);
  const Tensor k = Tensor::randn({1, 1, 8}, gen, DType::f64);
  auto score = [&](int64_t m, int64_t n) {
    return sum(rotary_embedding(q, 8, 8, m) * rotary_embedding(k, 8, 8, n)).item();
  };
  CHECK(score(7, 3) == Approx(score(104, 100)).epsilon(1e-12));
  CHECK(score(0, 0) == Approx(sum(q * k).item()).epsilon(1e-12));
}

TEST_CASE("gradcheck rotary_embedding with an offset and copied columns", "[gradcheck][ops][rope]") {
  REQUIRE_GRADCHECK(
      [](const std::vector<Tensor>& in) { return rotary_embedding(in[0], 4, 8, 3, 100.0); },
      {leaf({2, 5, 12}, 1)});
}

TEST_CASE("alibi_slopes follow the reference get_slopes", "[ops][alibi]") {
  const std::vector<double> eight = alibi_slopes(8);
  REQUIRE(eight.size() == 8);
  for (int h = 1; h <= 8; ++h) CHECK(eight[static_cast<size_t>(h - 1)] == std::pow(2.0, -h));
  // 6 heads: the 4 of a power of two, then slopes 1 and 3 (0-based 0 and 2) of 8.
  const std::vector<double> six = alibi_slopes(6);
  const std::vector<double> want = {std::pow(2.0, -2), std::pow(2.0, -4), std::pow(2.0, -6),
                                    std::pow(2.0, -8), std::pow(2.0, -1), std::pow(2.0, -3)};
  REQUIRE(six.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(six[i] == Approx(want[i]).epsilon(1e-15));
  CHECK(alibi_slopes(1) == std::vector<double>{std::pow(2.0, -8)});
  CHECK(alibi_slopes(3).size() == 3);
  CHECK(alibi_slopes(3)[2] == Approx(std::pow(2.0, -2)).epsilon(1e-15));  // get_slopes(4)[0::2][:1]
}

TEST_CASE("alibi_bias adds -m (i - j) with the queries last among the keys", "[ops][alibi]") {
  const Tensor scores = Tensor::zeros({1, 2, 2, 4}, DType::f64);
  const Tensor out = alibi_bias(scores);
  const double* s = out.data<double>();
  const std::vector<double> m = alibi_slopes(2);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 4; ++j) {
        CHECK(s[(h * 2 + i) * 4 + j] == Approx(-m[static_cast<size_t>(h)] * static_cast<double>(2 + i - j)));
      }
    }
  }
}

TEST_CASE("gradcheck alibi_bias", "[gradcheck][ops][alibi]") {
  REQUIRE_GRADCHECK([](const std::vector<Tensor>& in) { return alibi_bias(in[0]); },
                    {leaf({2, 3, 2, 5}, 2)});
}

TEST_CASE("repeat_heads gives query head h the key/value head h / repeats", "[ops][gqa]") {
  const Tensor x = Tensor::from({1, 2, 3, 4}, {1, 2, 1, 2}, DType::f64);
  const Tensor y = repeat_heads(x, 3);  // (1,6,1,2)
  CHECK(y.to_vector() == std::vector<double>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
}

TEST_CASE("gradcheck repeat_heads", "[gradcheck][ops][gqa]") {
  REQUIRE_GRADCHECK([](const std::vector<Tensor>& in) { return repeat_heads(in[0], 3); },
                    {leaf({2, 2, 3, 4}, 3)});
}

TEST_CASE("gradcheck fused attention with shared key/value heads and ALiBi",
          "[gradcheck][ops][attention][gqa][alibi]") {
  // 4 query heads of width 3 over 2 key/value heads: qkv (B,T,12 + 2*6), across two query blocks.
  for (const bool alibi : {false, true}) {
    for (const int64_t kv_heads : {1, 2}) {
      INFO("alibi " << alibi << ", kv_heads " << kv_heads);
      REQUIRE_GRADCHECK(
          [&](const std::vector<Tensor>& in) {
            return causal_self_attention(in[0], 4, kv_heads, alibi);
          },
          {leaf({1, 67, 12 + 2 * kv_heads * 3}, 5)});
    }
  }
}

TEST_CASE("symmetric alibi_bias adds -m |i - j|, later keys as far as earlier ones",
          "[ops][alibi]") {
  const Tensor out = alibi_bias(Tensor::zeros({1, 2, 3, 3}, DType::f64), {}, 0, AlibiForm::symmetric);
  const double* s = out.data<double>();
  const std::vector<double> m = alibi_slopes(2);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        CHECK(s[(h * 3 + i) * 3 + j] == Approx(-m[static_cast<size_t>(h)] * std::abs(static_cast<double>(i - j))));
      }
    }
  }
}

TEST_CASE("gradcheck symmetric alibi_bias", "[gradcheck][ops][alibi]") {
  REQUIRE_GRADCHECK([](const std::vector<Tensor>& in) {
    return alibi_bias(in[0], {}, 0, AlibiForm::symmetric);
  }, {leaf({2, 2, 4, 4}, 3)});
}
