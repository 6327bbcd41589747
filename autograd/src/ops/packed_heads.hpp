#pragma once
// How the fused attention ops (attention.cpp, linear_attention.cpp) read the heads of a packed
// qkv (B,T,C + 2 KV) in place, and run one task per (batch, head) on the OpenMP team.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::detail::packed {

// Where the heads lie in qkv (B,T,W): the C = H d query columns first, then the keys and the
// values of the KV = kv_heads d columns each (W = C + 2 KV); query head h reads key/value head
// h / group, group = H / kv_heads (grouped-query attention; group 1 is multi-head attention).
// A value head may be `dv` wide instead of d (Performer's packed features: q and k heads are
// its M features, v heads the head width); 0 means d.
struct Layout {
  int64_t t, c, kv, d, group;
  int64_t dv = 0;
  int64_t value_width() const { return dv > 0 ? dv : d; }
  int64_t kv_heads() const { return kv / d; }
  int64_t width() const { return c + kv + kv_heads() * value_width(); }
};

// One (batch, head) pair's matrices inside qkv: row i of Q is q + i * ld, of K k + i * ld, of V
// v + i * ld, with ld = W. Its rows of y (B,T,H dv) start at y_offset, H dv apart. `bf16_values`: f32
// holding bf16 values (under Precision::bf16), so the products' other operands are rounded too.
template <class T>
struct Head {
  T *q, *k, *v;
  int64_t ld;
  bool bf16_values = false;
};

template <class T>
Head<T> head_of(T* qkv, int64_t b, int64_t h, const Layout& l) {
  T* row0 = qkv + b * l.t * l.width();
  const int64_t kv_head = h / l.group;
  return {row0 + h * l.d, row0 + l.c + kv_head * l.d, row0 + l.c + l.kv + kv_head * l.value_width(),
          l.width()};
}

inline int64_t y_offset(int64_t b, int64_t h, const Layout& l) {
  const int64_t heads = l.c / l.d;
  return (b * l.t * heads + h) * l.value_width();
}

// The layout of qkv for n_heads query heads over n_kv_heads key/value heads (0: n_heads);
// ShapeError naming `op` unless qkv is (B,T,C + 2 C kv_heads/heads) with kv_heads dividing heads.
Layout packed_layout(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads, const char* op);

// Calls f(b, h, thread_scratch) for every pair of a batch row b < `b` and a head h < `h` on the
// OpenMP team; each thread owns `per_thread` elements of `scratch`. Pairs are handed out one at a
// time: each pair's work is its own, so no result depends on which thread takes it, and a thread
// slowed by another program on its core takes fewer.
template <class T, class F>
void for_each_head(int64_t b, int64_t h, Tensor& scratch, int64_t per_thread, F&& f) {
  T* base = scratch.data<T>();
  const int64_t pairs = b * h;
#pragma omp parallel for schedule(dynamic) if (pairs > 1)
  for (int64_t pair = 0; pair < pairs; ++pair) {
    f(pair / h, pair % h, base + omp_get_thread_num() * per_thread);
  }
}

// The backward's schedule: one task per (batch, key/value head), which zeroes that head's dK and
// dV in dqkv and then calls f(b, h, thread_scratch) for the query heads sharing it in turn, so
// their additions into dK and dV happen in one order whatever the thread count.
template <class T, class F>
void for_each_kv_group(int64_t b, const Layout& l, T* dqkv, Tensor& scratch, int64_t per_thread,
                       F&& f) {
  for_each_head<T>(b, l.kv_heads(), scratch, per_thread, [&](int64_t bi, int64_t kvi, T* s) {
    const int64_t first = kvi * l.group;
    const Head<T> shared = head_of(dqkv, bi, first, l);
    for (int64_t i = 0; i < l.t; ++i) {
      std::fill_n(shared.k + i * shared.ld, l.d, T(0));
      std::fill_n(shared.v + i * shared.ld, l.value_width(), T(0));
    }
    for (int64_t hi = first; hi < first + l.group; ++hi) f(bi, hi, s);
  });
}

}  // namespace tinygpt::detail::packed
