// matmul: C = op(A) op(B), batched or not; its gradients are matmuls again.
#include "batched_product.hpp"
#include "common.hpp"
#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;
using Grads = std::vector<Tensor>;

// C (..., M, N) = op(A) (..., M, K) op(B) (..., K, N); either side may be a shared (M, K) or
// (K, N).
Tensor matmul_forward(ProductBackend backend, const MatmulPlan& p, const Tensor& a, const Tensor& b,
                      bool ta, bool tb) {
  Tensor out = Tensor::empty(p.out, a.dtype());
  dispatch_float(a.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    if (p.m == 0 || p.n == 0) return;
    if (p.k == 0) {
      out.fill_(0.0);
      return;
    }
    gemm_batched<T>(backend, p, ta, tb, {a.data<T>()}, {b.data<T>()}, out.data<T>());
  });
  return out;
}

// dA = g op(B)^T (or its transpose), dB = op(A)^T g (or its transpose), each summed over the
// batches its operand is broadcast across.
Grads matmul_backward(ProductBackend backend, const Tensor& g, const Tensor& a, const Tensor& b,
                      bool ta, bool tb, bool need_a, bool need_b) {
  auto mm = [backend](const Tensor& x, const Tensor& y, bool tx, bool ty) {
    return matmul_on(backend, x, y, tx, ty);
  };
  Tensor ga, gb;
  if (need_a) ga = sum_to(ta ? mm(b, g, tb, true) : mm(g, b, false, !tb), a.shape());
  if (need_b && b.ndim() == 2 && a.ndim() > 2 && !ta) {
    // b is shared by every batch: one tall product sums over the batch for free.
    gb = tb ? mm(fold_rows(g), fold_rows(a), true, false)
            : mm(fold_rows(a), fold_rows(g), true, false);
  } else if (need_b) {
    gb = sum_to(tb ? mm(g, a, true, ta) : mm(a, g, !ta, false), b.shape());
  }
  return Grads{ga, gb};
}

}  // namespace

namespace detail {

Tensor matmul_on(ProductBackend backend, const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check_same_dtype(a, b, "matmul");
  const Tensor out = matmul_forward(backend, plan_matmul(a, b, ta, tb), a, b, ta, tb);
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return record("matmul", out, {a, b},
                [backend, a = a.detach(), b = b.detach(), ta, tb, need_a, need_b](const Tensor& g) {
    return matmul_backward(backend, g, a, b, ta, tb, need_a, need_b);
  });
}

}  // namespace detail

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  return matmul_on(kernels::product_backend(a.dtype()), a, b, ta, tb);
}

}  // namespace tinygpt
