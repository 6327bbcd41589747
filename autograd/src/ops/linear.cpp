// linear and gelu_linear: y = x W + b and y = gelu(h) W + b over the rows of x (or h), each a
// forward function and a backward function. Under a bf16 backend (Precision::bf16) the
// backward pass keeps its input rounded to bf16 instead of the f32 values, as autocast saves its
// bf16 casts: half the memory, and its products round nothing again.

#include <algorithm>
#include <type_traits>
#include <vector>

#include "batched_product.hpp"
#include "common.hpp"
#include "kernels/gelu_kernels.hpp"
#include "rounded.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;
using Grads = std::vector<Tensor>;

// Which gradients the backward pass makes: of the input, the weight, the bias.
struct Needs {
  bool x, w, b;
};

Needs needs_of(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return {x.requires_grad(), weight.requires_grad(), bias.defined() && bias.requires_grad()};
}

// The product of linear and gelu_linear: x (..., K) @ weight (K, N) + bias (N).
MatmulPlan plan_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const char* op) {
  check_same_dtype(x, weight, op);
  if (x.ndim() < 2 || weight.ndim() != 2 ||
      (bias.defined() && bias.shape() != Shape{weight.shape()[1]})) {
    throw ShapeError(Operation(op),
                     fmt::format("expects x (..., K) with at least 2 dims, weight (K, N) and bias "
                                 "(N); got x {}, weight {}, bias {}",
                                 x.shape().str(), weight.shape().str(),
                                 bias.defined() ? bias.shape().str() : "none"));
  }
  if (bias.defined()) check_same_dtype(x, bias, op);
  return plan_matmul(x, weight, false, false, op);
}

// Whether a linear on x runs its products in bf16: an f32 product with work on a bf16 backend.
bool bf16_product(ProductBackend backend, const Tensor& x, const MatmulPlan& p) {
  return x.dtype() == DType::f32 && kernels::rounds_to_bf16(backend) && p.m > 0 && p.n > 0 &&
         p.k > 0;
}

// Rows per block of column_sums: each block's sums run over its rows in order and the blocks'
// sums are added in block order, a fixed order whatever the thread count.
constexpr int64_t kColumnSumRows = 128;

// Column sums of g (rows, n) -> (n), accumulated in double. Each thread takes whole blocks of
// rows, so it streams contiguous memory (the pass waits on reading g, not on its adds), the
// block's sums in L1. With `rounded`, g's values rounded to bf16 go there in the same pass
// (packed rows of n), as the bf16 backward needs beside the sums: one read of g instead of two.
Tensor column_sums(const Tensor& g, bf16* rounded = nullptr) {
  const int64_t n = g.shape()[g.ndim() - 1], rows = n == 0 ? 0 : g.numel() / n;
  const int64_t blocks = (rows + kColumnSumRows - 1) / kColumnSumRows;
  thread_local std::vector<double> block_sums, sums;  // kept: a warm step allocates nothing
  block_sums.assign(static_cast<size_t>(blocks * n), 0.0);
  Tensor out = Tensor::empty({n}, g.dtype());
  dispatch_float(g.dtype(), "linear", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = g.data<T>();
    double* const partial = block_sums.data();  // the calling thread's, shared with the team
    for_range(rows * n > kParallelGrain && blocks > 1, blocks, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        double* acc = partial + b * n;
        for (int64_t r = b * kColumnSumRows; r < std::min(rows, (b + 1) * kColumnSumRows); ++r) {
          const T* row = pg + r * n;
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<double>(row[j]);
          if constexpr (std::is_same_v<T, float>) {
            if (rounded != nullptr) kernels::to_bf16(row, 1, n, n, rounded + r * n);
          }
        }
      }
    });
    sums.assign(static_cast<size_t>(n), 0.0);
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t j = 0; j < n; ++j) sums[j] += partial[b * n + j];
    }
    T* po = out.data<T>();
    for (int64_t j = 0; j < n; ++j) po[j] = static_cast<T>(sums[j]);
  });
  return out;
}

// x W + b in x's dtype for `op`; every row is the bias when K is 0.
Tensor product(ProductBackend backend, const MatmulPlan& p, const Tensor& x, const Tensor& weight,
               const Tensor& bias, const char* op) {
  Tensor out = Tensor::empty(p.out, x.dtype());
  dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if (p.m == 0 || p.n == 0) return;
    const T* pb = bias.defined() ? bias.data<T>() : nullptr;
    if (p.k == 0) {
      T* po = out.data<T>();
      for (int64_t r = 0; r < p.m; ++r) {
        for (int64_t j = 0; j < p.n; ++j) po[r * p.n + j] = pb != nullptr ? pb[j] : T(0);
      }
      return;
    }
    gemm_batched<T>(backend, p, false, false, {x.data<T>()}, {weight.data<T>()}, out.data<T>(), pb);
  });
  return out;
}

// x16 W + b (f32) from x already rounded; W is rounded by the product.
Tensor product_bf16(ProductBackend backend, const MatmulPlan& p, const Rounded& x16,
                    const Tensor& weight, const Tensor& bias) {
  Tensor out = Tensor::empty(p.out, DType::f32);
  gemm_batched<float>(backend, p, false, false, {nullptr, x16.data}, {weight.data<float>()},
                      out.data<float>(), bias.defined() ? bias.data<float>() : nullptr);
  return out;
}

// dx = g W^T, dW = x^T g over all rows at once, db = column sums of g; f32 and f64.
Grads linear_backward_values(ProductBackend backend, const Tensor& g, const Tensor& x,
                             const Tensor& w, Needs needs) {
  Tensor gx, gw, gb;
  if (needs.x) gx = matmul_on(backend, g, w, false, true);
  if (needs.w) gw = matmul_on(backend, fold_rows(x), fold_rows(g), true, false);
  if (needs.b) gb = column_sums(g);
  return Grads{gx, gw, gb};
}

// The same on a bf16 backend: g rounded once for dx = g W^T and dW = x^T g, W again for dx.
// x's rounding comes from input16(dx) once dx is made (dx undefined when not needed), so that
// gelu_linear can make it and finish dx in one pass.
template <class Input16>
Grads linear_backward_bf16(ProductBackend backend, const Tensor& g, const Tensor& w,
                           Input16 input16, Needs needs) {
  const int64_t k = w.shape()[0], n = w.shape()[1], rows = g.numel() / n;
  Tensor gx, gw, gb;
  bf16* g16_out = nullptr;
  const Rounded g16 = needs.b ? Rounded::room(g.numel(), g16_out) : rounded(g);
  if (needs.b) gb = column_sums(g, g16_out);  // g rounded in the same pass
  if (needs.x) {
    Shape shape = g.shape();
    shape[shape.ndim() - 1] = k;
    gx = Tensor::empty(shape, DType::f32);
    gemm_batched<float>(backend, plain_plan(rows, k, n), false, true, {g.data<float>(), g16.data},
                        {w.data<float>()}, gx.data<float>());
  }
  const Rounded x16 = input16(gx);
  if (needs.w) {
    gw = Tensor::empty({k, n}, DType::f32);
    gemm_batched<float>(backend, plain_plan(k, n, rows), true, false, {nullptr, x16.data},
                        {g.data<float>(), g16.data}, gw.data<float>());
  }
  return {gx, gw, gb};
}

// What linear's backward pass reads: x, or on a bf16 backend x rounded to bf16 in its place,
// which is all dW = x^T g needs: half the memory. W is rounded again in the backward pass rather
// than kept: one more pass over the weights, so that no rounded copy of every layer's weights is
// held through the step.
struct LinearSaved {
  ProductBackend backend;
  Needs needs;
  Tensor x, w;
  Rounded x16;
};

// y (B,T,N) = x (B,T,K) @ W (K,N) + b (N)
Tensor linear_forward(const MatmulPlan& p, const Tensor& x, const Tensor& weight,
                      const Tensor& bias, LinearSaved& saved) {
  if (bf16_product(saved.backend, x, p)) {
    saved.x16 = rounded(x);
    return product_bf16(saved.backend, p, saved.x16, weight, bias);
  }
  saved.x = x.detach();
  return product(saved.backend, p, x, weight, bias, "linear");
}

// dx (B,T,K) = g (B,T,N) W^T, dW (K,N) = x^T g over all B T rows, db (N) = column sums of g.
Grads linear_backward(const Tensor& g, const LinearSaved& s) {
  if (s.x16.data == nullptr) return linear_backward_values(s.backend, g, s.x, s.w, s.needs);
  const Rounded& x16 = s.x16;
  auto input16 = [&x16](const Tensor&) { return x16; };
  return linear_backward_bf16(s.backend, g, s.w, input16, s.needs);
}

// gelu(h) and its slope gelu'(h) in h's dtype, off the tape, from one exp per element.
struct GeluValues {
  Tensor values, slope;
};

GeluValues gelu_values(const Tensor& h) {
  GeluValues out{Tensor::empty(h.shape(), h.dtype()), Tensor::empty(h.shape(), h.dtype())};
  dispatch_float(h.dtype(), "gelu_linear", [&](auto tag) {
    using T = decltype(tag);
    const T* ph = h.data<T>();
    T* pv = out.values.data<T>();
    T* ps = out.slope.data<T>();
    const int64_t n = h.numel();
    constexpr int64_t kChunk = 4096;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    for_range(n > kParallelGrain, chunks, [&](int64_t first, int64_t last) {
      for (int64_t c = first; c < last; ++c) {
        const int64_t lo = c * kChunk;
        kernels::gelu_with_slope(ph + lo, pv + lo, ps + lo, std::min(kChunk, n - lo));
      }
    });
  });
  return out;
}

// gelu of bf16 values (count of them, rows of `cols`), rounded to bf16 row by row, row i's values
// given by h16_row(i) as the pass reaches it. With `grad` (count values), also grad *= gelu'(h) in
// the same pass.
template <class RowH16>
Rounded gelu_rounded(int64_t count, int64_t cols, float* grad, RowH16 h16_row) {
  bf16* out = nullptr;
  Rounded r = Rounded::room(count, out);
  const int64_t rows = count / cols;
  for_range(count > kParallelGrain, rows, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      kernels::gelu_bf16_rounded(h16_row(i), out + i * cols,
                                 grad != nullptr ? grad + i * cols : nullptr, cols);
    }
  });
  return r;
}

// g *= slope in place (the gradient linear's backward just made).
template <class T>
void times_slope(T* g, const T* slope, int64_t n) {
  for_range(n > kParallelGrain, n, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) g[i] *= slope[i];
  });
}

// What gelu_linear's backward pass reads. f32 and f64 keep gelu(h) and its slope in place of h
// (the same memory): the backward pass then multiplies by the slope instead of evaluating an exp
// per element again. On a bf16 backend, as autocast where fc's output is bf16, GELU reads h
// rounded and writes the product's operand rounded too; only h's rounding is kept.
struct GeluLinearSaved {
  ProductBackend backend;
  Needs needs;
  Tensor w;
  GeluValues gelu;
  Rounded h16;
  int64_t count, k;  // h's values, and its rows' width
};

// y (B,T,N) = gelu(h (B,T,K)) @ W (K,N) + b (N)
Tensor gelu_linear_forward(const MatmulPlan& p, const Tensor& h, const Tensor& weight,
                           const Tensor& bias, GeluLinearSaved& saved) {
  if (bf16_product(saved.backend, h, p)) {
    // h16 (kept for the backward pass) and gelu's rounding in one pass over h: each row of h16 is
    // rounded as the pass reaches it and read back from L1.
    bf16* h16 = nullptr;
    saved.h16 = Rounded::room(saved.count, h16);
    const float* pf = h.data<float>();
    const int64_t k = saved.k;
    const Rounded gelu16 = gelu_rounded(saved.count, k, nullptr, [pf, h16, k](int64_t i) {
      kernels::to_bf16(pf + i * k, 1, k, k, h16 + i * k);
      return static_cast<const bf16*>(h16 + i * k);
    });
    return product_bf16(saved.backend, p, gelu16, weight, bias);
  }
  saved.gelu = gelu_values(h);
  return product(saved.backend, p, saved.gelu.values, weight, bias, "gelu_linear");
}

// dh (B,T,K) = (g (B,T,N) W^T) gelu'(h), dW (K,N) = gelu(h)^T g, db (N) = column sums of g.
Grads gelu_linear_backward(const Tensor& g, const GeluLinearSaved& s) {
  if (s.h16.data != nullptr) {
    // gelu'(h) multiplies dh as gelu(h) is evaluated again for dW.
    auto input16 = [&s](Tensor& gh) {
      const bf16* h16 = s.h16.data;
      const int64_t k = s.k;
      return gelu_rounded(s.count, k, gh.defined() ? gh.data<float>() : nullptr,
                          [h16, k](int64_t i) { return h16 + i * k; });
    };
    return linear_backward_bf16(s.backend, g, s.w, input16, s.needs);
  }
  Grads grads = linear_backward_values(s.backend, g, s.gelu.values, s.w, s.needs);
  if (s.needs.x) {
    dispatch_float(s.gelu.slope.dtype(), "gelu_linear", [&](auto tag) {
      using T = decltype(tag);
      times_slope(grads[0].data<T>(), s.gelu.slope.data<T>(), s.gelu.slope.numel());
    });
  }
  return grads;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const MatmulPlan p = plan_linear(x, weight, bias, "linear");
  LinearSaved saved{kernels::product_backend(x.dtype()), needs_of(x, weight, bias), Tensor{},
                    weight.detach(), Rounded{}};
  const Tensor y = linear_forward(p, x, weight, bias, saved);
  return record("linear", y, {x, weight, bias},
                [saved](const Tensor& g) { return linear_backward(g, saved); });
}

Tensor gelu_linear(const Tensor& h, const Tensor& weight, const Tensor& bias) {
  const MatmulPlan p = plan_linear(h, weight, bias, "gelu_linear");
  GeluLinearSaved saved{kernels::product_backend(h.dtype()), needs_of(h, weight, bias),
                        weight.detach(), GeluValues{}, Rounded{}, h.numel(), p.k};
  const Tensor y = gelu_linear_forward(p, h, weight, bias, saved);
  return record("gelu_linear", y, {h, weight, bias},
                [saved](const Tensor& g) { return gelu_linear_backward(g, saved); });
}

}  // namespace tinygpt
