// Matrix products through BLAS (blas.hpp): matmul, linear, and linear after GELU. Transposes are
// BLAS flags.
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "blas.hpp"
#include "gelu_kernels.hpp"
#include "kernels.hpp"
#include "rounded.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;
using Grads = std::vector<Tensor>;

struct MatmulPlan {
  Shape out;
  int64_t batch = 1;          // number of (M,K)@(K,N) products
  int64_t m = 0, n = 0, k = 0;
  int64_t a_stride = 0, b_stride = 0;  // elements between consecutive batches (0: shared)
};

Shape leading(const Shape& s) {  // all but the last two axes
  Shape out;
  for (int64_t i = 0; i + 2 < s.ndim(); ++i) out.push_back(s[i]);
  return out;
}

MatmulPlan plan_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  auto describe = [&] {
    return fmt::format("{}{} @ {}{}", sa.str(), ta ? "^T" : "", sb.str(), tb ? "^T" : "");
  };
  if (sa.ndim() < 2 || sb.ndim() < 2 || sa.ndim() > 4 || sb.ndim() > 4) {
    throw ShapeError(fmt::format("matmul: operands must have 2 to 4 dims, got {}", describe()));
  }
  MatmulPlan p;
  p.m = ta ? sa[sa.ndim() - 1] : sa[sa.ndim() - 2];
  p.k = ta ? sa[sa.ndim() - 2] : sa[sa.ndim() - 1];
  const int64_t kb = tb ? sb[sb.ndim() - 1] : sb[sb.ndim() - 2];
  p.n = tb ? sb[sb.ndim() - 2] : sb[sb.ndim() - 1];
  if (p.k != kb) {
    throw ShapeError(fmt::format("matmul: inner dimensions {} and {} differ in {}", p.k, kb,
                                 describe()));
  }
  const Shape ba = leading(sa), bb = leading(sb);
  if (ba.ndim() > 0 && bb.ndim() > 0 && ba != bb) {
    throw ShapeError(fmt::format("matmul: batch dimensions {} and {} differ in {}", ba.str(),
                                 bb.str(), describe()));
  }
  p.out = ba.ndim() > 0 ? ba : bb;
  p.batch = p.out.numel();
  p.a_stride = ba.ndim() > 0 ? p.m * p.k : 0;
  p.b_stride = bb.ndim() > 0 ? p.k * p.n : 0;
  p.out.push_back(p.m);
  p.out.push_back(p.n);
  // A batched (..., M, K) times a shared (K, N) is one tall product: fold the batch into M.
  if (!ta && bb.ndim() == 0 && ba.ndim() > 0) {
    p.m *= p.batch;
    p.batch = 1;
  }
  return p;
}

// C = op(A) op(B) for every batch, on the OpenMP team: whole batches per thread, and a single
// large product cut into kPanels row (or column) panels. Each piece is one single-threaded BLAS
// call (see blas.hpp). With `bias` (N values, one product), every row of C starts as the bias
// and the product is added to it (beta = 1), each thread filling its own panel just before its
// call; bf16 products take it in the product's epilogue instead (one pass over C fewer).
//
// The pieces depend on the shapes only, never on the thread count: a BLAS kernel may sum a
// panel's edge rows in another order than the same rows inside a larger call (OpenBLAS's Haswell
// sgemm does for a panel's last, partial tile of rows), so cutting by thread count would make
// results depend on it. At least four panels of at most kPanelRows rows, two per core of the
// machines this project targets: with fewer, the two cores' products slow down badly on some
// shapes under oneDNN's single-threaded sgemm, and more only add calls (docs/PERFORMANCE.md,
// "What runs").
constexpr int64_t kPanels = 4;
constexpr int64_t kPanelRows = 512;

// An operand of a product: its values, and their bf16 rounding when the caller already holds it
// (linear keeps its input's for the backward pass).
template <class T>
struct Operand {
  const T* values = nullptr;
  const bf16* rounded = nullptr;
};

// Under Bf16Products::f32_fma: `count` values of an operand as f32 holding their bf16 rounding,
// from the rounding the caller holds or rounded here.
Tensor widened(const Operand<float>& x, int64_t count, int64_t ld) {
  return x.rounded != nullptr ? widened_rows(x.rounded, count, ld)
                              : widened_rows(x.values, count, ld);
}

template <class T>
void gemm_batched(const MatmulPlan& p, bool ta, bool tb, Operand<T> a, Operand<T> b, T* c,
                  const T* bias = nullptr) {
  const int64_t lda = ta ? p.m : p.k, ldb = tb ? p.k : p.n, ldc = p.n;
  // Too little work to share below 2^20 multiply-adds: a thread costs more to wake than such a
  // product takes on one core, while the small model's output layer, a few times larger, already
  // gains from sharing.
  const bool small = p.batch * p.m * p.n * p.k < (int64_t{1} << 20);
  const bool split_rows = p.m >= p.n;
  const int64_t extent = split_rows ? p.m : p.n;
  const int64_t panels = (small || p.batch >= kPanels)
                             ? 1
                             : std::max(kPanels, (extent + kPanelRows - 1) / kPanelRows);
  const bool bf16_operands = std::is_same_v<T, float> && matmul_precision() == Precision::bf16;
  // Each operand is rounded once, by the whole team, unless the caller holds its rounding (the
  // panels would otherwise each round the operand they share). Row panels share all of B: it is
  // laid out once as oneDNN's matmul reads it (pack_b), rather than copied so by every panel.
  // Where the products run on the f32 FMAs (Bf16Products::f32_fma), both operands are widened
  // back to f32 once instead, for every panel to read as they are.
  Rounded a_rounded, b_rounded;
  Tensor packed_storage, a_wide, b_wide;
  PackedB packed;
  const bf16* a16 = a.rounded;
  const bf16* b16 = b.rounded;
  const bool widen = bf16_operands && bf16_products() == Bf16Products::f32_fma;
  if constexpr (std::is_same_v<T, float>) {
    if (widen) {
      a_wide = widened(a, (p.a_stride > 0 ? p.batch : 1) * p.m * p.k, lda);
      b_wide = widened(b, (p.b_stride > 0 ? p.batch : 1) * p.k * p.n, ldb);
    } else if (bf16_operands && a16 == nullptr) {
      a_rounded = round_rows(a.values, (p.a_stride > 0 ? p.batch : 1) * p.m * p.k, lda);
      a16 = a_rounded.data;
    }
    // Every panel has one of two row counts (the extent split as evenly as it goes).
    const int64_t fewer = extent / panels, more = (extent + panels - 1) / panels;
    const bool pack = bf16_operands && !widen && b.values != nullptr && split_rows && panels > 1 &&
                      p.batch == 1 && p.k > 0 &&
                      packs_b(ta, fewer, p.n, p.k, lda, ldc, bias != nullptr) &&
                      packs_b(ta, more, p.n, p.k, lda, ldc, bias != nullptr);
    if (pack) {
      packed_storage = Tensor::empty({(packed_b_bytes(p.k, p.n) + 3) / 4}, DType::f32);
      pack_b(tb, p.k, p.n, b.values, ldb, packed_storage.data<float>());
      packed.data = packed_storage.data<float>();
    } else if (bf16_operands && !widen && b16 == nullptr) {
      b_rounded = round_rows(b.values, (p.b_stride > 0 ? p.batch : 1) * p.k * p.n, ldb);
      b16 = b_rounded.data;
    }
  }
#pragma omp parallel for collapse(2) schedule(static) if (!small && p.batch * panels > 1)
  for (int64_t i = 0; i < p.batch; ++i) {
    for (int64_t panel = 0; panel < panels; ++panel) {
      const int64_t lo = extent * panel / panels, hi = extent * (panel + 1) / panels;
      if (hi == lo) continue;
      // Rows lo..hi of op(A) start at row lo of A, or column lo of A when it is transposed;
      // columns lo..hi of op(B) likewise.
      const int64_t a_offset = i * p.a_stride + (split_rows ? (ta ? lo : lo * lda) : 0);
      const int64_t b_offset = i * p.b_stride + (split_rows ? 0 : (tb ? lo * ldb : lo));
      T* ci = c + i * p.m * p.n + (split_rows ? lo * ldc : lo);
      const int64_t rows = split_rows ? hi - lo : p.m, cols = split_rows ? p.n : hi - lo;
      const T* bias_cols = bias != nullptr ? bias + (split_rows ? 0 : lo) : nullptr;
      if constexpr (std::is_same_v<T, float>) {
        if (widen) {
          gemm_widened(ta, tb, rows, cols, p.k, 1.0f, a_wide.data<float>() + a_offset, lda,
                       b_wide.data<float>() + b_offset, ldb, 0.0f, ci, ldc, bias_cols);
          continue;
        }
        if (packed.data != nullptr) {
          gemm(ta, rows, cols, p.k, 1.0f, a16 + a_offset, lda, packed, 0.0f, ci, ldc, bias_cols);
          continue;
        }
        if (bf16_operands) {  // oneDNN's matmul adds the bias as it writes C
          gemm(ta, tb, rows, cols, p.k, 1.0f, a16 + a_offset, lda, b16 + b_offset, ldb, 0.0f, ci,
               ldc, bias_cols);
          continue;
        }
      }
      if (bias_cols != nullptr) {
        for (int64_t r = 0; r < rows; ++r) std::copy_n(bias_cols, cols, ci + r * ldc);
      }
      const T beta = bias != nullptr ? T(1) : T(0);
      gemm(ta, tb, rows, cols, p.k, T(1), a.values + a_offset, lda, b.values + b_offset, ldb, beta,
           ci, ldc);
    }
  }
}

// The product of linear and gelu_linear: x (..., K) @ weight (K, N) + bias (N).
MatmulPlan plan_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const char* op) {
  check_same_dtype(x, weight, op);
  if (x.ndim() < 2 || weight.ndim() != 2 ||
      (bias.defined() && bias.shape() != Shape{weight.shape()[1]})) {
    throw ShapeError(fmt::format(
        "{}: expects x (..., K) with at least 2 dims, weight (K, N) and bias (N); got x {}, "
        "weight {}, bias {}",
        op, x.shape().str(), weight.shape().str(), bias.defined() ? bias.shape().str() : "none"));
  }
  if (bias.defined()) check_same_dtype(x, bias, op);
  return plan_matmul(x, weight, false, false);
}

// (..., R, C) -> (prod(...) * R, C); the row count spelled out, as -1 cannot be inferred when C
// is 0.
Tensor fold_rows(const Tensor& x) {
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < x.ndim(); ++i) rows *= x.shape()[i];
  return reshape(x, {rows, x.shape()[x.ndim() - 1]});
}

// Column sums of g (rows, n) -> (n), accumulated in double, each column over the rows in order,
// so the result does not depend on the thread count. Each thread takes a strip of whole 16-column
// groups and walks it row by row, its sums in L1 (walking down 64-column strips instead, whose
// rows lie a page apart, is slower). With `rounded`, g's values rounded to bf16 go there in the
// same pass (packed rows of n), as the bf16 backward needs beside the sums: one read of g instead
// of two, which is what the pass's time goes to.
Tensor column_sums(const Tensor& g, bf16* rounded = nullptr) {
  const int64_t n = g.shape()[g.ndim() - 1], rows = n == 0 ? 0 : g.numel() / n;
  Tensor out = Tensor::empty({n}, g.dtype());
  dispatch_float(g.dtype(), "linear", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = g.data<T>();
    T* po = out.data<T>();
    const int64_t groups = (n + 15) / 16;
#pragma omp parallel if (rows * n > kParallelGrain && groups > 1)
    {
      const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t lo = std::min(n, 16 * (groups * t / threads));
      const int64_t hi = std::min(n, 16 * (groups * (t + 1) / threads));
      thread_local std::vector<double> sums;
      sums.assign(static_cast<size_t>(std::max<int64_t>(hi - lo, 0)), 0.0);
      double* acc = sums.data();
      for (int64_t r = 0; r < rows && lo < hi; ++r) {
        const T* row = pg + r * n + lo;
#pragma omp simd
        for (int64_t j = 0; j < hi - lo; ++j) acc[j] += static_cast<double>(row[j]);
        if constexpr (std::is_same_v<T, float>) {
          if (rounded != nullptr) to_bf16(row, 1, hi - lo, hi - lo, rounded + r * n + lo);
        }
      }
      for (int64_t j = lo; j < hi; ++j) po[j] = static_cast<T>(acc[j - lo]);
    }
  });
  return out;
}

MatmulPlan plain_plan(int64_t m, int64_t n, int64_t k) {
  MatmulPlan p;
  p.out = {m, n};
  p.m = m, p.n = n, p.k = k;
  return p;
}

// y = x W + b  =>  dx = g W^T, dW = x^T g over all rows at once, db = column sums of g.
Grads linear_backward(const Tensor& g, const Tensor& x, const Tensor& w, bool need_x, bool need_w,
                      bool need_b) {
  Tensor gx, gw, gb;
  if (need_x) gx = matmul(g, w, false, true);
  if (need_w) gw = matmul(fold_rows(x), fold_rows(g), true, false);
  if (need_b) gb = column_sums(g);
  return Grads{gx, gw, gb};
}

// Whether a linear on x runs its products in bf16 (Precision::bf16, an f32 product with work).
bool bf16_product(const Tensor& x, const MatmulPlan& p) {
  return x.dtype() == DType::f32 && matmul_precision() == Precision::bf16 && p.m > 0 && p.n > 0 &&
         p.k > 0;
}

// x W + b in x's dtype for `op`; every row is the bias when K is 0.
Tensor product(const MatmulPlan& p, const Tensor& x, const Tensor& weight, const Tensor& bias,
               const char* op) {
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
    gemm_batched<T>(p, false, false, {x.data<T>()}, {weight.data<T>()}, out.data<T>(), pb);
  });
  return out;
}

// x16 W + b (f32) from x already rounded; W is rounded by the product.
Tensor product_bf16(const MatmulPlan& p, const Rounded& x16, const Tensor& weight, const Tensor& bias) {
  Tensor out = Tensor::empty(p.out, DType::f32);
  gemm_batched<float>(p, false, false, {nullptr, x16.data}, {weight.data<float>()}, out.data<float>(),
                      bias.defined() ? bias.data<float>() : nullptr);
  return out;
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
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t lo = c * kChunk;
      gelu_with_slope(ph + lo, pv + lo, ps + lo, std::min(kChunk, n - lo));
    }
  });
  return out;
}

// gelu of bf16 values (count of them, rows of `cols`), rounded to bf16 row by row. With `grad`
// (count values), also grad *= gelu'(h) in the same pass, from the same exp.
Rounded gelu_rounded(const Rounded& h16, int64_t count, int64_t cols, float* grad = nullptr) {
  bf16* out = nullptr;
  Rounded r = Rounded::room(count, out);
  const int64_t rows = count / cols;
#pragma omp parallel if (count > kParallelGrain)
  {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(cols));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      gelu_bf16(h16.data + i * cols, row.data(), grad != nullptr ? grad + i * cols : nullptr, cols);
      to_bf16(row.data(), 1, cols, cols, out + i * cols);
    }
  }
  return r;
}

// g *= slope in place (the gradient linear's backward just made).
template <class T>
void times_slope(T* g, const T* slope, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) g[i] *= slope[i];
}

// linear's backward under bf16: g rounded once for dx = g W^T and dW = x^T g, W again for dx.
// x's rounding comes from input16(dx) once dx is made (dx undefined when not needed), so that
// gelu_linear can make it and finish dx in one pass.
template <class Input16>
Grads linear_backward_bf16(const Tensor& g, const Tensor& w, Input16 input16, bool need_x,
                           bool need_w, bool need_b) {
  const int64_t k = w.shape()[0], n = w.shape()[1], rows = g.numel() / n;
  Tensor gx, gw, gb;
  bf16* g16_out = nullptr;
  const Rounded g16 = need_b ? Rounded::room(g.numel(), g16_out) : rounded(g);
  if (need_b) gb = column_sums(g, g16_out);  // g rounded in the same pass
  if (need_x) {
    Shape shape = g.shape();
    shape[shape.ndim() - 1] = k;
    gx = Tensor::empty(shape, DType::f32);
    gemm_batched<float>(plain_plan(rows, k, n), false, true, {g.data<float>(), g16.data},
                        {w.data<float>()}, gx.data<float>());
  }
  const Rounded x16 = input16(gx);
  if (need_w) {
    gw = Tensor::empty({k, n}, DType::f32);
    gemm_batched<float>(plain_plan(k, n, rows), true, false, {nullptr, x16.data},
                        {g.data<float>(), g16.data}, gw.data<float>());
  }
  return {gx, gw, gb};
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check_same_dtype(a, b, "matmul");
  const MatmulPlan p = plan_matmul(a, b, ta, tb);
  Tensor out = Tensor::empty(p.out, a.dtype());
  dispatch_float(a.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    if (p.m == 0 || p.n == 0) return;
    if (p.k == 0) {
      out.fill_(0.0);
      return;
    }
    gemm_batched<T>(p, ta, tb, {a.data<T>()}, {b.data<T>()}, out.data<T>());
  });
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return record("matmul", out, {a, b},
                [a = a.detach(), b = b.detach(), ta, tb, need_a, need_b](const Tensor& g) {
    // C = op(A) op(B)  =>  dA = g op(B)^T (or its transpose), dB = op(A)^T g (or its transpose).
    Tensor ga, gb;
    if (need_a) ga = sum_to(ta ? matmul(b, g, tb, true) : matmul(g, b, false, !tb), a.shape());
    if (need_b && b.ndim() == 2 && a.ndim() > 2 && !ta) {
      // b was shared by every batch: one tall product sums over the batch for free.
      gb = tb ? matmul(fold_rows(g), fold_rows(a), true, false)
              : matmul(fold_rows(a), fold_rows(g), true, false);
    } else if (need_b) {
      gb = sum_to(tb ? matmul(g, a, true, ta) : matmul(a, g, !ta, false), b.shape());
    }
    return Grads{ga, gb};
  });
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const MatmulPlan p = plan_linear(x, weight, bias, "linear");
  const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
  const bool need_b = bias.defined() && bias.requires_grad();
  if (bf16_product(x, p)) {
    // Keeps x's rounding instead of the f32 input, which dW = x^T g then does not need: half the
    // memory. W is rounded again in the backward pass rather than kept: one more pass over the
    // weights, so that no rounded copy of every layer's weights is held through the step.
    const Rounded x16 = rounded(x);
    Tensor out = product_bf16(p, x16, weight, bias);
    return record("linear", out, {x, weight, bias},
                  [w = weight.detach(), x16, need_x, need_w, need_b](const Tensor& g) {
      return linear_backward_bf16(g, w, [&x16](const Tensor&) { return x16; }, need_x, need_w,
                                  need_b);
    });
  }
  Tensor out = product(p, x, weight, bias, "linear");
  return record("linear", out, {x, weight, bias},
                [x = x.detach(), w = weight.detach(), need_x, need_w, need_b](const Tensor& g) {
    return linear_backward(g, x, w, need_x, need_w, need_b);
  });
}

Tensor gelu_linear(const Tensor& h, const Tensor& weight, const Tensor& bias) {
  const MatmulPlan p = plan_linear(h, weight, bias, "gelu_linear");
  const bool need_h = h.requires_grad(), need_w = weight.requires_grad();
  const bool need_b = bias.defined() && bias.requires_grad();
  const int64_t k = p.k;
  if (bf16_product(h, p)) {
    // As autocast, where fc's output is bf16: GELU reads h rounded, and writes the operand of
    // the product rounded too; only h's rounding is kept.
    const Rounded h16 = rounded(h);
    Tensor out = product_bf16(p, gelu_rounded(h16, h.numel(), k), weight, bias);
    return record("gelu_linear", out, {h, weight, bias},
                  [w = weight.detach(), h16, count = h.numel(), k, need_h, need_w,
                   need_b](const Tensor& g) {
      // d/dh = (g W^T) gelu'(h), made while gelu(h) is evaluated again for dW.
      auto input16 = [&](Tensor& gh) {
        return gelu_rounded(h16, count, k, gh.defined() ? gh.data<float>() : nullptr);
      };
      return linear_backward_bf16(g, w, input16, need_h, need_w, need_b);
    });
  }
  // f32 and f64 keep gelu(h) and its slope in place of h (the same memory): the backward pass
  // then multiplies by the slope instead of evaluating an exp per element again.
  const GeluValues a = gelu_values(h);
  Tensor out = product(p, a.values, weight, bias, "gelu_linear");
  return record("gelu_linear", out, {h, weight, bias},
                [a, w = weight.detach(), need_h, need_w, need_b](const Tensor& g) {
    Grads grads = linear_backward(g, a.values, w, need_h, need_w, need_b);
    if (need_h) {  // d/dh = (g W^T) gelu'(h)
      dispatch_float(a.slope.dtype(), "gelu_linear", [&](auto tag) {
        using T = decltype(tag);
        times_slope(grads[0].data<T>(), a.slope.data<T>(), a.slope.numel());
      });
    }
    return grads;
  });
}

}  // namespace tinygpt
