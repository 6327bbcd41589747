#pragma once
// The products of matmul, linear and gelu_linear on tensors: the shapes a product is planned
// from, and one product (batched or not) cut into pieces on the OpenMP team, each piece one call
// of kernels::gemm on the backend the op chose.
#include <cstdint>

#include "kernels/product.hpp"
#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::detail {

using kernels::bf16;
using kernels::ProductBackend;

struct MatmulPlan {
  Shape out;
  int64_t batch = 1;  // number of (M,K)@(K,N) products
  int64_t m = 0, n = 0, k = 0;
  int64_t a_stride = 0, b_stride = 0;  // elements between consecutive batches (0: shared)
};

// op(a) @ op(b) for a and b of 2 to 4 dims, op a transpose where ta (tb); throws ShapeError
// naming `op` (the op that asked) and the shapes unless they multiply.
MatmulPlan plan_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb,
                       const char* op = "matmul");

// (..., R, C) -> (prod(...) * R, C); the row count spelled out, as -1 cannot be inferred when C
// is 0.
Tensor fold_rows(const Tensor& x);

// One (m, k) @ (k, n) product.
MatmulPlan plain_plan(int64_t m, int64_t n, int64_t k);

// An input of a product: its values, and their bf16 rounding when the caller already holds it
// (linear keeps its input's for the backward pass).
template <class T>
struct ProductInput {
  const T* values = nullptr;
  const bf16* rounded = nullptr;
};

// C = op(A) op(B) for every batch of the plan, with `bias` (N values, one product) added to
// every row of C, on `backend`.
template <class T>
void gemm_batched(ProductBackend backend, const MatmulPlan& p, bool ta, bool tb,
                  ProductInput<T> a, ProductInput<T> b, T* c, const T* bias = nullptr);

// matmul (ops.hpp) on a given backend: the op's backward passes run their products on the
// backend of their forward pass.
Tensor matmul_on(ProductBackend backend, const Tensor& a, const Tensor& b, bool ta, bool tb);

}  // namespace tinygpt::detail
