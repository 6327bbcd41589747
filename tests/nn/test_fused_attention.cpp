// The fused causal attention (query blocks of 64 against BLAS score panels, weights recomputed
// in backward) against the general path (full (T,T) scores, mask, softmax), over several query
// blocks and a partial last one, forward and backward, f32 and f64, and across thread counts.
#include "nn_helpers.hpp"
#include "threads_scope.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

// The general path on packed qkv (B,T,3C): split heads, causal mask, softmax, merge.
Tensor general_attention(const Tensor& qkv, int64_t h) {
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3, d = c / h;
  const Tensor heads = permute(reshape(qkv, {b, t, 3, h, d}), {2, 0, 3, 1, 4});
  auto part = [&](int64_t i) { return reshape(narrow(heads, 0, i, 1), {b, h, t, d}); };
  const Tensor mask = nn::causal_mask(t, t).to(qkv.dtype());
  const Tensor y = nn::scaled_dot_product_attention(part(0), part(1), part(2), mask).output;
  return reshape(permute(y, {0, 2, 1, 3}), {b, t, c});
}

OutputAndGrad run(const Tensor& qkv, const Tensor& g, int64_t h, bool fused,
                  const AttentionPattern& pattern = {}) {
  return output_and_grad(qkv, g, [&](const Tensor& x) {
    return fused ? causal_self_attention(x, h, 0, false, pattern) : general_attention(x, h);
  });
}

}  // namespace

TEST_CASE("fused attention equals the general path over several query blocks",
          "[nn][attention][fused]") {
  for (DType dtype : {DType::f64, DType::f32}) {
    for (int64_t t : {1, 63, 64, 65, 150}) {
      INFO("dtype " << dtype_name(dtype) << ", T = " << t);
      Generator gen(static_cast<uint64_t>(t));
      const Tensor qkv = Tensor::randn({2, t, 3 * 12}, gen, dtype);
      const Tensor g = Tensor::randn({2, t, 12}, gen, dtype);
      const OutputAndGrad fused = run(qkv, g, 3, true), general = run(qkv, g, 3, false);
      const double tol = dtype == DType::f64 ? 1e-12 : 2e-5;
      require_all_close(fused.y, general.y, tol);
      require_all_close(fused.dx, general.dx, tol);
    }
  }
}

// On AVX-512 the f32 products of a block with at most 64 keys run on register tiles of 4 rows and
// up to four 16-lane vectors, skipping the causal diagonal's empty tiles: head widths and block
// sizes on both sides of every tile and vector edge, with more than 64 columns (two tiles).
TEST_CASE("fused f32 attention equals the general path for head widths across tile and block edges",
          "[nn][attention][fused]") {
  for (int64_t d : {1, 7, 16, 17, 31, 32, 33, 48, 64, 65, 80}) {
    for (int64_t t : {5, 64, 66, 130, 200}) {
      INFO("d = " << d << ", T = " << t);
      Generator gen(static_cast<uint64_t>(100 * d + t));
      const Tensor qkv = Tensor::randn({2, t, 3 * 2 * d}, gen);
      const Tensor g = Tensor::randn({2, t, 2 * d}, gen);
      const OutputAndGrad fused = run(qkv, g, 2, true), general = run(qkv, g, 2, false);
      require_all_close(fused.y, general.y, 2e-5);
      require_all_close(fused.dx, general.dx, 2e-5);
    }
  }
}

TEST_CASE("fused attention gives bit-identical results on 1 and 2 threads",
          "[nn][attention][fused]") {
  Generator gen(4);
  const Tensor qkv = Tensor::randn({3, 130, 3 * 16}, gen);
  const Tensor g = Tensor::randn({3, 130, 16}, gen);
  for (const AttentionPattern& pattern : {AttentionPattern{}, AttentionPattern::strided_attention(7)}) {
    INFO(pattern.str());
    OutputAndGrad one, two;
    {
      ThreadsScope scope(1);
      one = run(qkv, g, 2, true, pattern);
    }
    {
      ThreadsScope scope(2);
      two = run(qkv, g, 2, true, pattern);
    }
    REQUIRE(one.y == two.y);
    REQUIRE(one.dx == two.dx);
  }
}

TEST_CASE("gradcheck fused attention across two query blocks", "[gradcheck][nn][attention][fused]") {
  REQUIRE_GRADCHECK(
      [](const std::vector<Tensor>& in) { return causal_self_attention(in[0], 2); },
      {leaf({1, 70, 6}, 9)});
}

TEST_CASE("fused attention memory grows linearly in T: no (T,T) buffer", "[nn][attention][fused]") {
  // Forward and backward at T = 2048 with one head of width 4: a (T,T) float matrix alone would
  // be 16 MiB; everything the fused softmax op allocates here stays well below that, with or
  // without a stride, and linear attention, holding (d,d) state, below a quarter of it.
  const AttentionPattern pattern = GENERATE(AttentionPattern{}, AttentionPattern::strided_attention(45),
                                            AttentionPattern::linear_attention());
  const bool linear = pattern.is_linear();
  INFO(pattern.str());
  ThreadsScope scope(1);
  Generator gen(2);
  Tensor qkv = Tensor::randn({1, 2048, 12}, gen).set_requires_grad();
  empty_cache();
  reset_peak_memory();
  const int64_t before = memory_stats().bytes_in_use;
  const Tensor y =
      linear ? causal_linear_attention(qkv, 1) : causal_self_attention(qkv, 1, 0, false, pattern);
  y.backward(Tensor::ones({1, 2048, 4}));
  const int64_t used = memory_stats().peak_bytes_in_use - before;
  INFO("peak bytes above the inputs: " << used);
  REQUIRE(used < (linear ? 1 : 4) * 1024 * 1024);
}
