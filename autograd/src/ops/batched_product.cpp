#include "batched_product.hpp"

#include <emmintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <type_traits>

#include "common.hpp"
#include "kernels/gemv.hpp"
#include "rounded.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/profile.hpp"

namespace tinygpt::detail {
namespace {

using kernels::GemmCall;
using kernels::Operand;
using kernels::PackedB;

Shape leading(const Shape& s) {  // all but the last two axes
  Shape out;
  for (int64_t i = 0; i + 2 < s.ndim(); ++i) out.push_back(s[i]);
  return out;
}

// The pieces of one product on the OpenMP team: whole batches per thread, and a single large
// product cut into kPanels row (or column) panels. The pieces depend on the shapes only, never
// on the thread count: a BLAS kernel may sum a panel's edge rows in another order than the same
// rows inside a larger call, so cutting by thread count would make results depend on it. At least
// four panels of at most kPanelRows rows, two per core of the machines this project targets: with
// fewer, the two cores' products slow down badly on some shapes under oneDNN's single-threaded
// sgemm, and more only add calls (docs/PERFORMANCE.md, "What runs").
constexpr int64_t kPanels = 4;
constexpr int64_t kPanelRows = 512;

struct Pieces {
  // Too little work to share, below 2^20 multiply-adds: a thread costs more to wake than such a
  // product takes on one core, while the small model's output layer, a few times larger,
  // already gains from sharing.
  bool small;
  bool split_rows;  // panels of rows of C, or else of columns
  int64_t extent;   // the rows (or columns) the panels cut
  int64_t panels;
};

Pieces pieces_of(const MatmulPlan& p) {
  Pieces out;
  out.small = p.batch * p.m * p.n * p.k < (int64_t{1} << 20);
  out.split_rows = p.m >= p.n;
  out.extent = out.split_rows ? p.m : p.n;
  out.panels = (out.small || p.batch >= kPanels)
                   ? 1
                   : std::max(kPanels, (out.extent + kPanelRows - 1) / kPanelRows);
  return out;
}

// The operands as every piece reads them. An f32 product on a bf16 backend has each operand
// rounded once, by the whole team, unless the caller holds its rounding (the panels would
// otherwise each round the operand they share). Row panels share all of B: it is laid out once
// as oneDNN's matmul reads it (pack_b), rather than copied so by every panel. On bf16_f32_fma
// both operands are widened back to f32 once instead, for every panel to read as they are.
template <class T>
struct PieceOperands {
  ProductInput<T> a, b;
  int64_t lda = 0, ldb = 0;
  Rounded a_rounded, b_rounded;
  Tensor packed_storage, a_wide, b_wide;
  PackedB packed;

  Operand<T> a_at(int64_t offset) const { return at(a, a_wide, offset, lda); }
  Operand<T> b_at(int64_t offset) const {
    if constexpr (std::is_same_v<T, float>) {
      if (packed.data != nullptr) return kernels::packed_operand(packed);
    }
    return at(b, b_wide, offset, ldb);
  }

 private:
  static Operand<T> at(const ProductInput<T>& x, const Tensor& wide, int64_t offset, int64_t ld) {
    if constexpr (std::is_same_v<T, float>) {
      if (wide.defined()) return kernels::widened_operand(wide.data<float>() + offset, ld);
      if (x.rounded != nullptr) return kernels::operand(x.rounded + offset, ld);
    }
    return kernels::operand(x.values + offset, ld);
  }
};

// `count` values of an input as f32 holding their bf16 rounding, from the rounding the caller
// holds or rounded here.
Tensor widened(const ProductInput<float>& x, int64_t count, int64_t ld) {
  return x.rounded != nullptr ? widened_rows(x.rounded, count, ld)
                              : widened_rows(x.values, count, ld);
}

void prepare(ProductBackend backend, const MatmulPlan& p, bool ta, bool tb, const Pieces& pieces,
             bool bias, PieceOperands<float>& o) {
  if (!kernels::rounds_to_bf16(backend)) return;
  const int64_t a_count = (p.a_stride > 0 ? p.batch : 1) * p.m * p.k;
  const int64_t b_count = (p.b_stride > 0 ? p.batch : 1) * p.k * p.n;
  if (backend == ProductBackend::bf16_f32_fma) {
    o.a_wide = widened(o.a, a_count, o.lda);
    o.b_wide = widened(o.b, b_count, o.ldb);
    return;
  }
  if (o.a.rounded == nullptr) {
    o.a_rounded = round_rows(o.a.values, a_count, o.lda);
    o.a.rounded = o.a_rounded.data;
  }
  // Every panel has one of two row counts (the extent split as evenly as it goes).
  const int64_t fewer = pieces.extent / pieces.panels;
  const int64_t more = (pieces.extent + pieces.panels - 1) / pieces.panels;
  const int64_t ldc = p.n;
  const bool pack = o.b.values != nullptr && pieces.split_rows && pieces.panels > 1 &&
                    p.batch == 1 && p.k > 0 &&
                    kernels::packs_b(ta, fewer, p.n, p.k, o.lda, ldc, bias) &&
                    kernels::packs_b(ta, more, p.n, p.k, o.lda, ldc, bias);
  if (pack) {
    o.packed_storage = Tensor::empty({(kernels::packed_b_bytes(p.k, p.n) + 3) / 4}, DType::f32);
    kernels::pack_b(tb, p.k, p.n, o.b.values, o.ldb, o.packed_storage.data<float>());
    o.packed.data = o.packed_storage.data<float>();
  } else if (o.b.rounded == nullptr) {
    o.b_rounded = round_rows(o.b.values, b_count, o.ldb);
    o.b.rounded = o.b_rounded.data;
  }
}

void prepare(ProductBackend, const MatmulPlan&, bool, bool, const Pieces&, bool,
             PieceOperands<double>&) {}

}  // namespace

MatmulPlan plan_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb, const char* op) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  auto describe = [&] {
    return fmt::format("{}{} @ {}{}", sa.str(), ta ? "^T" : "", sb.str(), tb ? "^T" : "");
  };
  if (sa.ndim() < 2 || sb.ndim() < 2 || sa.ndim() > 4 || sb.ndim() > 4) {
    throw ShapeError(Operation(op),
                     fmt::format("operands must have 2 to 4 dims, got {}", describe()));
  }
  MatmulPlan p;
  p.m = ta ? sa[sa.ndim() - 1] : sa[sa.ndim() - 2];
  p.k = ta ? sa[sa.ndim() - 2] : sa[sa.ndim() - 1];
  const int64_t kb = tb ? sb[sb.ndim() - 1] : sb[sb.ndim() - 2];
  p.n = tb ? sb[sb.ndim() - 2] : sb[sb.ndim() - 1];
  if (p.k != kb) {
    throw ShapeError(Operation(op), fmt::format("inner dimensions {} and {} differ in {}", p.k,
                                                kb, describe()));
  }
  const Shape ba = leading(sa), bb = leading(sb);
  if (ba.ndim() > 0 && bb.ndim() > 0 && ba != bb) {
    throw ShapeError(Operation(op), fmt::format("batch dimensions {} and {} differ in {}",
                                                ba.str(), bb.str(), describe()));
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

Tensor fold_rows(const Tensor& x) {
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < x.ndim(); ++i) rows *= x.shape()[i];
  return reshape(x, {rows, x.shape()[x.ndim() - 1]});
}

MatmulPlan plain_plan(int64_t m, int64_t n, int64_t k) {
  MatmulPlan p;
  p.out = {m, n};
  p.m = m, p.n = n, p.k = k;
  return p;
}

namespace {

template <class T>
void run_pieces(ProductBackend backend, const MatmulPlan& p, bool ta, bool tb, ProductInput<T> a,
                ProductInput<T> b, T* c, const T* bias) {
  if constexpr (std::is_same_v<T, float>) {
    // One row (a decode step's products, and its attention's per head): the matrix-vector
    // loops read the weight at the memory's rate, which sgemm's blocking does not reach on a
    // single row, and a head's product is too small to pay for a call into oneDNN. Narrower
    // heads than kGemvHeadWidth stay on sgemm, which vectorises across the outputs.
    const int64_t width = tb ? p.k : p.n;
    if (backend == ProductBackend::onednn_f32 && p.m == 1 &&
        (p.batch == 1 || width >= kernels::kGemvHeadWidth)) {
      return kernels::gemv_batch(p.batch, a.values, p.a_stride, b.values, p.b_stride, tb, p.k,
                                 p.n, bias, c);
    }
  }
  const Pieces pieces = pieces_of(p);
  PieceOperands<T> o;
  o.a = a, o.b = b;
  o.lda = ta ? p.m : p.k, o.ldb = tb ? p.k : p.n;
  prepare(backend, p, ta, tb, pieces, bias != nullptr, o);
  const int64_t ldc = p.n, extent = pieces.extent, panels = pieces.panels;
  const bool split_rows = pieces.split_rows;
  // Piece q is panel q % panels of batch item q / panels.
  const int64_t count = p.batch * panels;
  for_range(!pieces.small && count > 1, count, [&](int64_t first, int64_t last) {
    for (int64_t q = first; q < last; ++q) {
      const int64_t i = q / panels, panel = q % panels;
      const int64_t lo = extent * panel / panels, hi = extent * (panel + 1) / panels;
      if (hi == lo) continue;
      // Rows lo..hi of op(A) start at row lo of A, or column lo of A when it is transposed;
      // columns lo..hi of op(B) likewise.
      const int64_t a_offset = i * p.a_stride + (split_rows ? (ta ? lo : lo * o.lda) : 0);
      const int64_t b_offset = i * p.b_stride + (split_rows ? 0 : (tb ? lo * o.ldb : lo));
      T* ci = c + i * p.m * p.n + (split_rows ? lo * ldc : lo);
      const int64_t rows = split_rows ? hi - lo : p.m, cols = split_rows ? p.n : hi - lo;
      const T* bias_cols = bias != nullptr ? bias + (split_rows ? 0 : lo) : nullptr;
      kernels::gemm(GemmCall<T>(backend, ta, tb, rows, cols, p.k, T(1), o.a_at(a_offset),
                                o.b_at(b_offset), T(0), ci, ldc, bias_cols));
    }
  });
}

}  // namespace

template <class T>
void gemm_batched(ProductBackend backend, const MatmulPlan& p, bool ta, bool tb,
                  ProductInput<T> a, ProductInput<T> b, T* c, const T* bias) {
  // Products inside a parallel region belong to an op's own loop, not to the step's table.
  if (!g_op_profiling || omp_in_parallel()) return run_pieces(backend, p, ta, tb, a, b, c, bias);
  const auto start = std::chrono::steady_clock::now();
  run_pieces(backend, p, ta, tb, a, b, c, bias);
  ProductProfileEntry e;
  e.ta = ta, e.tb = tb, e.batch = p.batch, e.m = p.m, e.n = p.n, e.k = p.k;
  e.bias = bias != nullptr;
  e.a_rounded = a.rounded != nullptr, e.b_rounded = b.rounded != nullptr;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  e.calls = 1;
  profile_product(e);
}

template void gemm_batched(ProductBackend, const MatmulPlan&, bool, bool, ProductInput<float>,
                           ProductInput<float>, float*, const float*);
template void gemm_batched(ProductBackend, const MatmulPlan&, bool, bool, ProductInput<double>,
                           ProductInput<double>, double*, const double*);

}  // namespace tinygpt::detail

namespace tinygpt {

namespace {

constexpr int64_t kCacheLine = 64;  // bytes, on every x86-64 CPU this runs on

// Every cache line of `count` floats from `p` written back and dropped from every level of cache.
void flush_from_caches(const void* p, int64_t count) {
  const char* line = static_cast<const char*>(p);
  for (int64_t i = 0; i < count * int64_t{sizeof(float)}; i += kCacheLine) _mm_clflush(line + i);
  _mm_mfence();
}

}  // namespace

double time_product_alone(const ProductProfileEntry& e, int repeats, bool cold) {
  using namespace detail;
  const ProductBackend backend = kernels::product_backend(DType::f32);
  const MatmulPlan p = [&] {
    MatmulPlan plan = plain_plan(e.m, e.n, e.k);
    plan.batch = e.batch;
    plan.a_stride = e.m * e.k, plan.b_stride = e.k * e.n;
    return plan;
  }();
  Generator gen(1);
  const Tensor a = Tensor::randn({e.batch * e.m * e.k}, gen);
  const Tensor b = Tensor::randn({e.batch * e.k * e.n}, gen);
  const Tensor bias = Tensor::randn({e.n}, gen);
  Tensor c = Tensor::empty({e.batch * e.m * e.n});
  const bool bf16 = kernels::rounds_to_bf16(backend);
  // Rounded as the step hands them over, outside the timing, as the step rounds them elsewhere.
  const Rounded a16 = bf16 && e.a_rounded ? rounded(a) : Rounded{};
  const Rounded b16 = bf16 && e.b_rounded ? rounded(b) : Rounded{};
  const ProductInput<float> in_a{a.data<float>(), a16.data}, in_b{b.data<float>(), b16.data};
  const auto flush = [&] {  // the operands, the output and the roundings' f32 slots
    for (const Tensor* t : std::initializer_list<const Tensor*>{&a, &b, &bias, &c, &a16.storage,
                                                                &b16.storage}) {
      if (t->defined()) flush_from_caches(t->data<float>(), t->numel());
    }
  };
  double best = 0.0;
  for (int i = 0; i <= repeats; ++i) {  // the first run makes the kernels and warms the caches
    if (cold) flush();
    const auto start = std::chrono::steady_clock::now();
    run_pieces<float>(backend, p, e.ta, e.tb, in_a, in_b, c.data<float>(),
                      e.bias ? bias.data<float>() : nullptr);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0 && (best == 0.0 || s < best)) best = s;
  }
  return best;
}

}  // namespace tinygpt
