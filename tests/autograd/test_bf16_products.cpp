// Precision::bf16 products: every f32 product (matmul in all transposes and batches, linear with
// its bias, the fused attention's) rounds its inputs to bf16 and accumulates in f32, so each
// entry is within bf16's rounding of the exact product: |c - exact| <= 2^-7 sum_k |a_ik b_kj|
// (two roundings of at most 2^-9 relative each, with room for f32's sums), and differs from f32's
// -- on the CPU's bf16 dot products and on the f32 FMAs alike (Bf16Products).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "autograd_test_utils.hpp"
#include "tinygpt/autograd.hpp"
#include "tinygpt/autograd/precision.hpp"

using namespace tinygpt;
using tinygpt::testing::bf16_of;

namespace {

// Entry-wise |got - exact| <= 2^-7 |a| |b| (with |a| |b| the product of absolute values), and
// at least one entry rounded away from the f32 product.
void check_bf16_product(const Tensor& got, const Tensor& f32, const Tensor& exact,
                        const Tensor& bound) {
  const std::vector<double> g = got.to_vector(), f = f32.to_vector(), e = exact.to_vector(),
                            b = bound.to_vector();
  REQUIRE(g.size() == e.size());
  size_t differs = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("entry " << i << ": bf16 " << g[i] << ", exact " << e[i]);
    REQUIRE(std::abs(g[i] - e[i]) <= std::ldexp(b[i], -7) + 1e-6);
    differs += g[i] != f[i] ? 1 : 0;
  }
  CHECK(differs > g.size() / 2);
}

Tensor f64(const Tensor& x) { return x.to(DType::f64); }

// x rounded to bfloat16 (nearest even), held in f32.
Tensor round_bf16(const Tensor& x) {
  std::vector<double> v = x.to_vector();
  for (double& e : v) e = bf16_of(e);
  return Tensor::from(v, x.shape(), DType::f32);
}

double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff / norm);
}

// Causal attention's output over `heads` heads, and the gradient of sum(y dy) by qkv.
std::pair<std::vector<double>, std::vector<double>> attention_and_grad(const Tensor& qkv,
                                                                      const Tensor& dy,
                                                                      int64_t heads) {
  Tensor x = qkv.clone().set_requires_grad();
  const Tensor y = causal_self_attention(x, heads);
  sum(mul(y, dy)).backward();
  return {y.to_vector(), x.grad().to_vector()};
}

// Every case runs on each kernel of bf16 products this CPU has (precision.hpp), whichever it
// defaults to.
Bf16Products each_bf16_products() {
  return GENERATE(from_range(available_bf16_products()));
}

Tensor abs_f64(const Tensor& x) {
  std::vector<double> v = x.to_vector();
  for (double& e : v) e = std::abs(e);
  return Tensor::from(v, x.shape(), DType::f64);
}

}  // namespace

TEST_CASE("bf16 matmul in every transpose and batch is within bf16 rounding of the exact product",
          "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  Generator gen(3);
  // Large enough to be cut into panels on the team; batched (3,...) and shared operands. The row
  // panels share B laid out for oneDNN (pack_b): k odd and off its 32-row blocks, n off its
  // 64-column blocks and 16-lane vectors.
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{300, 500}, {301, 95}, {97, 17}}) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        const Tensor a = Tensor::randn(ta ? Shape{3, k, 700} : Shape{3, 700, k}, gen);
        const Tensor b = Tensor::randn(tb ? Shape{n, k} : Shape{k, n}, gen);
        const Tensor f32 = matmul(a, b, ta, tb);
        const Tensor exact = matmul(f64(a), f64(b), ta, tb);
        const Tensor bound = matmul(abs_f64(a), abs_f64(b), ta, tb);
        const PrecisionGuard precision(Precision::bf16);
        INFO("k " << k << " n " << n << " ta " << ta << " tb " << tb);
        check_bf16_product(matmul(a, b, ta, tb), f32, exact, bound);
      }
    }
  }
}

TEST_CASE("bf16 linear adds its f32 bias to a bf16 product", "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  Generator gen(4);
  // Panels of rows (1,600 x 384), and of columns (80 x 2,000): each panel adds its own
  // columns' bias in the product's epilogue.
  for (const auto& [x_shape, n] : {std::pair{Shape{8, 200, 96}, int64_t{384}},
                                   std::pair{Shape{2, 40, 96}, int64_t{2000}}}) {
    const Tensor x = Tensor::randn(x_shape, gen);
    const Tensor w = Tensor::randn({96, n}, gen);
    const Tensor bias = mul(Tensor::randn({n}, gen), 10.0);
    const Tensor f32 = linear(x, w, bias);
    const Tensor exact = linear(f64(x), f64(w), f64(bias));
    const Tensor bound = linear(abs_f64(x), abs_f64(w), Tensor::zeros({n}, DType::f64));
    const PrecisionGuard precision(Precision::bf16);
    INFO("x " << x_shape.str() << " n " << n);
    check_bf16_product(linear(x, w, bias), f32, exact, bound);
  }
}

TEST_CASE("bf16 fused attention stays within 1% of f32, forward and backward", "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  Generator gen(5);
  const Tensor qkv = Tensor::randn({2, 130, 3 * 64}, gen);
  const Tensor dy = Tensor::randn({2, 130, 64}, gen);
  const auto [y32, g32] = attention_and_grad(qkv, dy, 2);
  std::pair<std::vector<double>, std::vector<double>> low;
  {
    const PrecisionGuard precision(Precision::bf16);
    low = attention_and_grad(qkv, dy, 2);
  }
  CHECK(low.first != y32);
  CHECK(relative_error(low.first, y32) < 1e-2);
  CHECK(relative_error(low.second, g32) < 1e-2);
}

TEST_CASE("bf16 linear's gradients are bf16 products of the rounded operands", "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  Generator gen(6);
  // (95, 301): dx = g W^T reads W^T packed with k = 301 odd and n = 95 off every block.
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{96, 384}, {95, 301}}) {
    INFO("K " << k << " N " << n);
    Tensor x = Tensor::randn({4, 300, k}, gen).set_requires_grad();
    Tensor w = Tensor::randn({k, n}, gen).set_requires_grad();
    Tensor bias = Tensor::randn({n}, gen).set_requires_grad();
    const Tensor g = Tensor::randn({4, 300, n}, gen);
    const auto grads = [&] {
      x.zero_grad();
      w.zero_grad();
      bias.zero_grad();
      sum(mul(linear(x, w, bias), g)).backward();
      return std::vector<Tensor>{x.grad(), w.grad(), bias.grad()};
    };
    const std::vector<Tensor> f32 = grads();
    std::vector<Tensor> low;
    {
      const PrecisionGuard precision(Precision::bf16);
      low = grads();
    }
    // dx = g W^T, dW = x^T g (over all rows); db = column sums of g, in f32 either way.
    const Tensor rows_x = reshape(f64(x), {-1, k}), rows_g = reshape(f64(g), {-1, n});
    check_bf16_product(low[0], f32[0], matmul(f64(g), f64(w), false, true),
                       matmul(abs_f64(g), abs_f64(w), false, true));
    check_bf16_product(low[1], f32[1], matmul(rows_x, rows_g, true, false),
                       matmul(reshape(abs_f64(x), {-1, k}), reshape(abs_f64(g), {-1, n}), true,
                              false));
    CHECK(low[2].to_vector() == f32[2].to_vector());
  }
}

TEST_CASE("bf16 gelu_linear is linear after gelu of h rounded to bf16, forward and backward",
          "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  Generator gen(7);
  const Tensor h0 = Tensor::randn({4, 300, 96}, gen, DType::f32, 0.0, 2.0);
  const Tensor w0 = Tensor::randn({96, 128}, gen), b0 = Tensor::randn({128}, gen);
  const Tensor g = Tensor::randn({4, 300, 128}, gen);
  const auto run = [&](bool fused, const Tensor& input) {
    Tensor h = input.clone().set_requires_grad(), w = w0.clone().set_requires_grad();
    Tensor b = b0.clone().set_requires_grad();
    const Tensor y = fused ? gelu_linear(h, w, b) : linear(gelu(h), w, b);
    y.backward(g);
    return std::vector<std::vector<double>>{y.to_vector(), h.grad().to_vector(), w.grad().to_vector(),
                                            b.grad().to_vector()};
  };
  const auto f32 = run(true, h0);
  const PrecisionGuard precision(Precision::bf16);
  const auto low = run(true, h0), rounded_first = run(false, round_bf16(h0));
  for (size_t k = 0; k < low.size(); ++k) {
    INFO("output " << k << " (y, dh, dW, db)");
    // Equal up to the last bit of GELU's f32 evaluation (vectorised or not) moving a bf16 rounding.
    CHECK(relative_error(low[k], rounded_first[k]) < 1e-4);
    CHECK(relative_error(low[k], f32[k]) < 1e-2);
  }
  CHECK(low[0] != f32[0]);
}

// a and b hold the same values, a NaN matching a NaN: products of values near float's largest
// sum to +inf and -inf in some columns, and their sum is NaN, in whichever order the units add.
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && !(std::isnan(a[i]) && std::isnan(b[i]))) return false;
  }
  return true;
}

// f32 rounded to bf16 as the CPU's conversion does: a subnormal reads as zero, its sign kept.
double bf16_of_flushed(double x) {
  return std::abs(x) < std::numeric_limits<float>::min() ? std::copysign(0.0, x) : bf16_of(x);
}

TEST_CASE("bf16 gelu_linear's GELU of every finite bf16 value is f32 gelu's, rounded, and its "
          "slope gelu's, with and without subnormals flushed", "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  const bool flush_before = flush_denormals();
  const bool flush = GENERATE(false, true);
  set_flush_denormals(flush);
  INFO("bf16 products on " << bf16_products_name(bf16_products()) << ", subnormals "
                           << (flush ? "flushed" : "kept"));
  // Every bf16 bit pattern but the 256 infinities and NaNs: 1,020 rows of 64.
  std::vector<double> values;
  for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
    if (((bits >> 7) & 0xffu) == 0xffu) continue;
    const uint32_t word = bits << 16;
    float f;
    std::memcpy(&f, &word, sizeof f);
    values.push_back(f);
  }
  const int64_t k = 64, rows = static_cast<int64_t>(values.size()) / k;
  REQUIRE(rows * k == static_cast<int64_t>(values.size()));
  std::vector<double> eye(k * k, 0.0);
  for (int64_t i = 0; i < k; ++i) eye[i * k + i] = 1.0;
  Generator gen(12);
  const Tensor h0 = Tensor::from(values, {rows, k}, DType::f32);
  const Tensor g = round_bf16(Tensor::randn({rows, k}, gen));
  // In f32: gelu(h) and g gelu'(h).
  Tensor h = h0.clone().set_requires_grad();
  const Tensor y32 = gelu(h);
  y32.backward(g);
  const std::vector<double> want_y = y32.to_vector(), want_dh = h.grad().to_vector();
  // In bf16, through the identity: y is GELU's rounding, exactly; dh is g gelu'(h), exactly; and
  // dW, from GELU evaluated again in the backward pass, is linear's on that rounding.
  const PrecisionGuard precision(Precision::bf16);
  const auto weight_grad = [&](const Tensor& input, bool fused) {
    Tensor w = Tensor::from(eye, {k, k}, DType::f32).set_requires_grad();
    const Tensor out = fused ? gelu_linear(input, w, Tensor{}) : linear(input, w, Tensor{});
    out.backward(g);
    return std::make_pair(out.to_vector(), w.grad().to_vector());
  };
  Tensor hb = h0.clone().set_requires_grad();
  const auto [got_y, got_dw] = weight_grad(hb, true);
  const std::vector<double> got_dh = hb.grad().to_vector();
  const Tensor rounded = Tensor::from(got_y, {rows, k}, DType::f32);
  CHECK(same_values(weight_grad(rounded, false).second, got_dw));
  set_flush_denormals(flush_before);
  int64_t differ = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    // Past |h| ~ 1e19, x^2 overflows and gelu's slope is NaN in f32 as well.
    const bool same = got_y[i] == bf16_of_flushed(want_y[i]) &&
                      (got_dh[i] == want_dh[i] || (std::isnan(got_dh[i]) && std::isnan(want_dh[i])));
    if (!same && differ++ < 5) {
      INFO("h " << values[i] << ": y " << got_y[i] << " against " << bf16_of_flushed(want_y[i])
                << ", dh " << got_dh[i] << " against " << want_dh[i]);
      CHECK(same);
    }
  }
  CHECK(differ == 0);
}

TEST_CASE("bf16 fused attention keeps qkv rounded to bf16: half the memory, and the gradients of "
          "its rounded input", "[ops][bf16][attention]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  Generator gen(8);
  const Tensor qkv0 = Tensor::randn({2, 150, 4 * 32 + 2 * 2 * 32}, gen);  // 4 query heads over 2
  const Tensor dy = Tensor::randn({2, 150, 4 * 32}, gen);
  const PrecisionGuard precision(Precision::bf16);
  for (const AttentionPattern& pattern : {AttentionPattern{}, AttentionPattern::strided_attention(16)}) {
    const auto run = [&](const Tensor& input) {
      Tensor x = input.clone().set_requires_grad();
      const int64_t before = memory_stats().bytes_in_use;
      Tensor y;
      {
        const Tensor qkv = x * 1.0;  // an activation, as a projection's output: the op's to keep
        y = causal_self_attention(qkv, 4, 2, true, pattern);
      }
      const int64_t kept = memory_stats().bytes_in_use - before - y.numel() * 4 - 2 * 4 * 150 * 4;
      sum(mul(y, dy)).backward();
      return std::make_tuple(kept, y.to_vector(), x.grad().to_vector());
    };
    const auto [kept, y, grad] = run(qkv0);
    const auto [kept_rounded, y_rounded, grad_rounded] = run(round_bf16(qkv0));
    CHECK(kept <= qkv0.numel() * 2);  // bf16: two bytes a value (y and the log-sum-exps aside)
    CHECK(y == y_rounded);
    CHECK(grad == grad_rounded);
  }
}

TEST_CASE("bf16 gelu_linear keeps only h's bf16 rounding for its backward pass", "[ops][bf16][memory]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  Generator gen(9);
  const Tensor x = Tensor::randn({512, 256}, gen).set_requires_grad();
  const Tensor w = Tensor::randn({256, 64}, gen).set_requires_grad();
  const PrecisionGuard precision(Precision::bf16);
  const auto kept = [&](bool fused) {
    const int64_t before = memory_stats().bytes_in_use;
    Tensor y;
    {
      const Tensor h = x * 1.0;  // an activation, as fc's output: the ops' to keep
      y = fused ? gelu_linear(h, w, Tensor{}) : linear(gelu(h), w, Tensor{});
    }
    return memory_stats().bytes_in_use - before - y.numel() * 4;
  };
  const int64_t h_bytes = 512 * 256 * 4;
  CHECK(kept(false) >= h_bytes + h_bytes / 2);  // h in f32 (for GELU), gelu(h) in bf16
  CHECK(kept(true) <= h_bytes / 2);
}

// On AVX-512 with avx512_bf16 the fused attention's bf16 products run on register tiles that sum
// pairs of terms (vdpbf16ps), packing odd widths, transposed operands and partial blocks
// themselves: head widths and lengths on both sides of every pair, vector, tile and block edge.
// On inputs already bf16, the scores differ from f32's only in the order of their sums, and the
// rest by the rounding of P, dY and dS to bf16: within a few 2^-9 of f32, where a wrong pairing
// or a stray padding term would be off by the size of the values themselves.
TEST_CASE("bf16 fused attention is within bf16 rounding of f32 on bf16 inputs across tile and "
          "block edges", "[ops][bf16][attention]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  for (int64_t d : {1, 7, 16, 17, 31, 32, 33, 64, 65, 80}) {
    for (int64_t t : {5, 64, 66, 130, 200}) {
      INFO("d = " << d << ", T = " << t);
      Generator gen(static_cast<uint64_t>(100 * d + t));
      const Tensor qkv = round_bf16(Tensor::randn({2, t, 3 * 2 * d}, gen));
      const Tensor dy = Tensor::randn({2, t, 2 * d}, gen);
      const auto [y32, g32] = attention_and_grad(qkv, dy, 2);
      std::pair<std::vector<double>, std::vector<double>> low;
      {
        const PrecisionGuard precision(Precision::bf16);
        low = attention_and_grad(qkv, dy, 2);
      }
      const double ey = relative_error(low.first, y32), eg = relative_error(low.second, g32);
      CHECK(ey < 5e-3);
      CHECK(eg < 5e-3);
      if (t > 1 && d > 1) CHECK(low.first != y32);
    }
  }
}

namespace {

// One head of causal attention in f64, the products' operands rounded as Precision::bf16 rounds
// them: Q, K, V (given rounded), P in Y = P V, dY, and dS; the softmax, the row sums rowsum(dY Y)
// and dS itself from unrounded values. qkv (T, 3 C) and dy (T, C) rows; head h of width d.
void reference_head(const std::vector<double>& qkv, const std::vector<double>& dy, int64_t t,
                    int64_t c, int64_t d, int64_t h, std::vector<double>& y,
                    std::vector<double>& dqkv) {
  const auto q = [&](int64_t i, int64_t e) { return qkv[i * 3 * c + h * d + e]; };
  const auto k = [&](int64_t i, int64_t e) { return qkv[i * 3 * c + c + h * d + e]; };
  const auto v = [&](int64_t i, int64_t e) { return qkv[i * 3 * c + 2 * c + h * d + e]; };
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (int64_t i = 0; i < t; ++i) {
    std::vector<double> p(static_cast<size_t>(i + 1)), dp(p.size());
    double top = -1e300, sum = 0.0;
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0.0;
      for (int64_t e = 0; e < d; ++e) s += q(i, e) * k(j, e);
      p[j] = s * scale;
      top = std::max(top, p[j]);
    }
    for (double& e : p) sum += e = std::exp(e - top);
    for (double& e : p) e /= sum;
    double delta = 0.0;
    for (int64_t e = 0; e < d; ++e) {
      double out = 0.0;
      for (int64_t j = 0; j <= i; ++j) out += bf16_of(p[j]) * v(j, e);
      y[i * c + h * d + e] = out;
      delta += dy[i * c + h * d + e] * out;
    }
    for (int64_t j = 0; j <= i; ++j) {
      double dpj = 0.0;
      for (int64_t e = 0; e < d; ++e) {
        const double g = bf16_of(dy[i * c + h * d + e]);
        dpj += g * v(j, e);
        dqkv[j * 3 * c + 2 * c + h * d + e] += bf16_of(p[j]) * g;  // dV += P^T dY
      }
      const double ds = bf16_of(p[j] * (dpj - delta) * scale);
      for (int64_t e = 0; e < d; ++e) {
        dqkv[i * 3 * c + h * d + e] += ds * k(j, e);          // dQ = dS K
        dqkv[j * 3 * c + c + h * d + e] += ds * q(i, e);      // dK += dS^T Q
      }
    }
  }
}

}  // namespace

// Pins down which values the products read rounded, on every kind of bf16 products: within f32's
// sums of the f64 reference above (2e-5), where leaving P or dY unrounded is off by ~1e-3.
TEST_CASE("bf16 fused attention's products read Q, K, V, P, dY and dS rounded to bf16, and "
          "nothing else", "[ops][bf16][attention]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  for (const int64_t d : {17, 64}) {
    const int64_t t = 130, heads = 2, c = heads * d;
    INFO("d = " << d);
    Generator gen(static_cast<uint64_t>(40 + d));
    const Tensor qkv = round_bf16(Tensor::randn({1, t, 3 * c}, gen));
    const Tensor dy = Tensor::randn({1, t, c}, gen);
    std::vector<double> y(static_cast<size_t>(t * c)), dqkv(static_cast<size_t>(t * 3 * c));
    for (int64_t h = 0; h < heads; ++h) {
      reference_head(qkv.to_vector(), dy.to_vector(), t, c, d, h, y, dqkv);
    }
    const PrecisionGuard precision(Precision::bf16);
    const auto [got_y, got_dqkv] = attention_and_grad(qkv, dy, heads);
    CHECK(relative_error(got_y, y) < 2e-5);
    CHECK(relative_error(got_dqkv, dqkv) < 2e-5);
  }
}

// The products pack their operands into per-thread scratch (padded with zeros to whole tiles on
// AMX), which the next call reuses: a call on NaN and infinities, whose words fill that scratch,
// must leave the next call's results bit for bit as they were (0 x inf in the padding is NaN).
TEST_CASE("bf16 fused attention after a call on non-finite inputs gives the same bits as before",
          "[ops][bf16][attention]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  const PrecisionGuard precision(Precision::bf16);
  Generator gen(77);
  std::vector<double> poison(static_cast<size_t>(2 * 200 * 3 * 2 * 80));
  for (size_t i = 0; i < poison.size(); ++i) {
    poison[i] = i % 3 == 0 ? std::nan("") : (i % 3 == 1 ? HUGE_VAL : -HUGE_VAL);
  }
  const Tensor bad = Tensor::from(poison, {2, 200, 3 * 2 * 80}, DType::f32);
  const Tensor bad_dy = Tensor::full({2, 200, 2 * 80}, HUGE_VAL, DType::f32);
  for (const auto& [d, t] : {std::pair<int64_t, int64_t>{17, 66}, {7, 5}, {33, 130}}) {
    INFO("d = " << d << ", T = " << t);
    const Tensor qkv = Tensor::randn({2, t, 3 * 2 * d}, gen);
    const Tensor dy = Tensor::randn({2, t, 2 * d}, gen);
    const auto before = attention_and_grad(qkv, dy, 2);
    attention_and_grad(bad, bad_dy, 2);
    const auto after = attention_and_grad(qkv, dy, 2);
    CHECK(after.first == before.first);
    CHECK(after.second == before.second);
  }
}

// The same for the GEMM's products: B packed into oneDNN's layout (zeros past k and n), the
// operands rounded into buffers the allocator hands on.
TEST_CASE("bf16 linear and matmul after a call on non-finite inputs give the same bits as before",
          "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  const PrecisionGuard precision(Precision::bf16);
  Generator gen(78);
  const auto run = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    Tensor xs = x.clone().set_requires_grad(), ws = w.clone().set_requires_grad();
    const Tensor y = add(linear(xs, ws, b), gelu_linear(xs, ws, b));
    sum(mul(y, y)).backward();
    std::vector<double> out = y.to_vector(), dx = xs.grad().to_vector(),
                        dw = ws.grad().to_vector(), ab = matmul(xs.detach(), x, true).to_vector();
    out.insert(out.end(), dx.begin(), dx.end());
    out.insert(out.end(), dw.begin(), dw.end());
    out.insert(out.end(), ab.begin(), ab.end());
    return out;
  };
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{301, 95}, {97, 17}}) {
    INFO("k " << k << " n " << n);
    const Tensor x = Tensor::randn({700, k}, gen);
    const Tensor w = mul(Tensor::randn({k, n}, gen), 0.1);
    const Tensor b = Tensor::randn({n}, gen);
    const std::vector<double> before = run(x, w, b);
    // The same shapes, so that the buffers the allocator caches by size come back.
    run(Tensor::full({700, k}, std::nan(""), DType::f32), Tensor::full({k, n}, HUGE_VAL, DType::f32),
        Tensor::full({n}, -HUGE_VAL, DType::f32));
    CHECK(run(x, w, b) == before);
  }
}

TEST_CASE("bf16 products on the f32 FMAs are the f32 products of the operands rounded to bf16",
          "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(Bf16Products::f32_fma);
  Generator gen(9);
  // 2-D A of 700 rows: row panels sharing B packed once (pack_b), B as stored or transposed;
  // batched A: B rounded once and widened by each panel.
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{301, 95}, {64, 1100}, {97, 17}}) {
    for (const bool batched : {false, true}) {
      for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
          const Shape a_shape = ta ? Shape{k, 700} : Shape{700, k};
          const Tensor a = Tensor::randn(batched ? Shape{2, a_shape[0], a_shape[1]} : a_shape, gen);
          const Tensor b = Tensor::randn(tb ? Shape{n, k} : Shape{k, n}, gen);
          const std::vector<double> want = matmul(round_bf16(a), round_bf16(b), ta, tb).to_vector();
          const PrecisionGuard precision(Precision::bf16);
          const std::vector<double> got = matmul(a, b, ta, tb).to_vector();
          REQUIRE(got.size() == want.size());
          size_t differ = 0;
          for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i] ? 1 : 0;
          INFO("k " << k << " n " << n << " batched " << batched << " ta " << ta << " tb " << tb);
          CHECK(differ == 0);
        }
      }
    }
  }
}

TEST_CASE("bf16 products with a zero-size axis give empty results and zero gradients",
          "[ops][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  const Bf16ProductsGuard units(each_bf16_products());
  const PrecisionGuard precision(Precision::bf16);
  Generator gen(4);
  const auto all_zero = [](const Tensor& t) {
    for (double v : t.to_vector()) {
      if (v != 0.0) return false;
    }
    return true;
  };
  // (rows, K, N): no rows, no input features (every output is the bias), no output features.
  for (const auto& [rows, k, n] : {std::tuple<int64_t, int64_t, int64_t>{0, 4, 5}, {3, 0, 5},
                                   {3, 4, 0}}) {
    for (const bool gelu : {false, true}) {
      INFO("rows " << rows << " K " << k << " N " << n << (gelu ? " gelu_linear" : " linear"));
      Tensor x = Tensor::randn({rows, k}, gen).set_requires_grad();
      Tensor w = Tensor::randn({k, n}, gen).set_requires_grad();
      Tensor b = Tensor::randn({n}, gen).set_requires_grad();
      const Tensor y = gelu ? gelu_linear(x, w, b) : linear(x, w, b);
      REQUIRE(y.shape() == Shape{rows, n});
      if (k == 0) CHECK(all_zero(sub(y, broadcast_to(b.detach(), {rows, n}))));
      sum(y).backward();
      REQUIRE(x.grad().shape() == x.shape());
      REQUIRE(w.grad().shape() == w.shape());
      REQUIRE(b.grad().shape() == b.shape());
      if (rows == 0) CHECK((all_zero(w.grad()) && all_zero(b.grad())));
      if (n == 0) CHECK(all_zero(x.grad()));
      if (k == 0) CHECK(b.grad().to_vector() == std::vector<double>(n, static_cast<double>(rows)));
      const Tensor m = matmul(x.detach(), w.detach());
      REQUIRE(m.shape() == Shape{rows, n});
      if (k == 0) CHECK(all_zero(m));
    }
  }
}

TEST_CASE("AmxTiles configures the tiles where they are usable and throws a clear error elsewhere",
          "[ops][bf16]") {
  if (amx_tiles_usable()) {
    CHECK_NOTHROW(AmxTiles());
  } else {
    CHECK_THROWS_WITH(AmxTiles(), Catch::Contains("AmxTiles") &&
                                      Catch::Contains("amx_tiles_usable"));
  }
}
