// Rotary position embedding (RoPE, Su et al. 2021) in Hugging Face's LLaMA/GPT-NeoX "rotate half"
// form: within each head of width d, dimension i < d/2 pairs with i + d/2 and the pair turns by
// the angle pos * theta^(-2i/d). A rotation is linear and orthogonal, so the backward is the same
// kernel turning the gradient back by the opposite angle; nothing but the shape is saved.
#include <omp.h>

#include <cmath>
#include <vector>

#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using detail::kParallelGrain;

// cos and sin of every (position, pair) angle, (T, d/2) each, computed in double as one table
// per call (T d/2 values: negligible next to the projections that made x).
struct Angles {
  std::vector<double> cos, sin;
};

Angles rotary_angles(int64_t t, int64_t d, int64_t offset, double theta) {
  const int64_t half = d / 2;
  Angles a{std::vector<double>(static_cast<size_t>(t * half)),
           std::vector<double>(static_cast<size_t>(t * half))};
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    for (int64_t p = 0; p < t; ++p) {
      const double angle = static_cast<double>(offset + p) * inv_freq;
      a.cos[static_cast<size_t>(p * half + i)] = std::cos(angle);
      a.sin[static_cast<size_t>(p * half + i)] = std::sin(angle);
    }
  }
  return a;
}

// out (B,T,W) = x rotated over its first `rotated` columns (heads of width d), copied beyond;
// direction -1 turns by the opposite angles (the backward).
template <class T>
void rotate(const T* x, T* out, int64_t b, int64_t t, int64_t w, int64_t d, int64_t rotated,
            const Angles& a, T direction) {
  const int64_t half = d / 2, rows = b * t;
  for_range(rows * w > kParallelGrain, rows, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      const int64_t p = row % t;
      const T* xr = x + row * w;
      T* orow = out + row * w;
      for (int64_t h0 = 0; h0 < rotated; h0 += d) {
        for (int64_t i = 0; i < half; ++i) {
          const T c = static_cast<T>(a.cos[static_cast<size_t>(p * half + i)]);
          const T s = direction * static_cast<T>(a.sin[static_cast<size_t>(p * half + i)]);
          const T lo = xr[h0 + i], hi = xr[h0 + half + i];
          orow[h0 + i] = lo * c - hi * s;
          orow[h0 + half + i] = hi * c + lo * s;
        }
      }
      std::copy(xr + rotated, xr + w, orow + rotated);
    }
  });
}

Tensor rotate_tensor(const Tensor& x, int64_t d, int64_t rotated, const Angles& a, double direction) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), "rotary_embedding", [&](auto tag) {
    using T = decltype(tag);
    rotate<T>(x.data<T>(), out.data<T>(), x.size(0), x.size(1), x.size(2), d, rotated, a,
              static_cast<T>(direction));
  });
  return out;
}

}  // namespace

Tensor rotary_embedding(const Tensor& x, int64_t head_dim, int64_t rotated, int64_t offset,
                        double theta) {
  if (x.ndim() != 3 || head_dim <= 0 || head_dim % 2 != 0 || rotated < 0 ||
      rotated > x.size(2) || rotated % head_dim != 0 || offset < 0 || !(theta > 0.0)) {
    throw ShapeError(fmt::format(
        "rotary_embedding: expects x (B,T,W) and an even head_dim dividing rotated <= W, offset "
        ">= 0, theta > 0; got x {}, head_dim {}, rotated {}, offset {}, theta {}",
        x.shape().str(), head_dim, rotated, offset, theta));
  }
  const auto angles = std::make_shared<Angles>(rotary_angles(x.size(1), head_dim, offset, theta));
  Tensor out = rotate_tensor(x, head_dim, rotated, *angles, 1.0);
  return record("rotary_embedding", out, {x}, [angles, head_dim, rotated](const Tensor& g) {
    return std::vector<Tensor>{rotate_tensor(g, head_dim, rotated, *angles, -1.0)};
  });
}

}  // namespace tinygpt
