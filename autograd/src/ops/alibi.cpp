// ALiBi (Press et al. 2022): attention with linear biases. Each head h adds -m_h (i - j) to the
// score of query position i against key position j; there are no position weights. The bias is
// a constant, so the gradient passes through unchanged. Bidirectional attention takes the
// symmetric form -m_h |i - j|. The fused causal kernel adds the same
// bias inside its score panels (ops/attention.cpp); this op is the general path's.
#include <cmath>
#include <cstdlib>

#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {

std::vector<double> alibi_slopes(int64_t n_heads) {
  if (n_heads <= 0) throw ValueError(fmt::format("alibi_slopes: needs n_heads > 0, got {}", n_heads));
  // The reference code's get_slopes: for n a power of two, the geometric sequence starting at
  // and stepping by 2^(-8/n); otherwise the slopes of the closest power of two below n, then
  // every other slope of twice that many for the heads that remain.
  const auto power_of_two = [](int64_t n) {
    std::vector<double> s;
    for (int64_t h = 1; h <= n; ++h) s.push_back(std::pow(2.0, -8.0 * static_cast<double>(h) / static_cast<double>(n)));
    return s;
  };
  int64_t closest = 1;
  while (closest * 2 <= n_heads) closest *= 2;
  std::vector<double> slopes = power_of_two(closest);
  const std::vector<double> extra = power_of_two(2 * closest);
  for (int64_t i = 0; static_cast<int64_t>(slopes.size()) < n_heads; i += 2) {
    slopes.push_back(extra[static_cast<size_t>(i)]);
  }
  return slopes;
}

Tensor alibi_bias(const Tensor& scores, const std::vector<int64_t>& key_positions,
                  int64_t first_query, AlibiForm form) {
  if (scores.ndim() != 4 || scores.size(2) > scores.size(3)) {
    throw ShapeError(fmt::format("alibi_bias: expects scores (B,H,Tq,Tk) with Tq <= Tk, got {}",
                                 scores.shape().str()));
  }
  const int64_t b = scores.size(0), h = scores.size(1), tq = scores.size(2), tk = scores.size(3);
  if (!key_positions.empty() && static_cast<int64_t>(key_positions.size()) != tk) {
    throw ShapeError(fmt::format("alibi_bias: {} key positions for scores {}",
                                 key_positions.size(), scores.shape().str()));
  }
  const auto position = [&](int64_t k) {
    return key_positions.empty() ? k : key_positions[static_cast<size_t>(k)];
  };
  Tensor out = scores.clone();
  if (out.numel() > 0) {
    const std::vector<double> slopes = alibi_slopes(h);
    dispatch_float(scores.dtype(), "alibi_bias", [&](auto tag) {
      using T = decltype(tag);
      T* s = out.data<T>();
      for (int64_t bh = 0; bh < b * h; ++bh) {
        const T m = static_cast<T>(slopes[static_cast<size_t>(bh % h)]);
        for (int64_t i = 0; i < tq; ++i) {
          T* row = s + (bh * tq + i) * tk;
          const int64_t pos = key_positions.empty() ? tk - tq + i : first_query + i;
          for (int64_t j = 0; j < tk; ++j) {
            const int64_t offset = position(j) - pos;
            const int64_t distance = form == AlibiForm::symmetric ? -std::abs(offset) : offset;
            row[j] += m * static_cast<T>(distance);
          }
        }
      }
    });
  }
  return record("alibi_bias", out, {scores}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

}  // namespace tinygpt
