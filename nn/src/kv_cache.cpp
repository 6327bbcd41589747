#include "tinygpt/nn/kv_cache.hpp"

#include <algorithm>

#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::nn {
namespace {

// dst[:, :, to, :] = src[:, :, from, :] for (B,H,S,d) tensors of one float type.
void copy_position(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  const int64_t bh = src.size(0) * src.size(1), s = src.size(2), t = dst.size(2), d = src.size(3);
  dispatch_float(src.dtype(), "KVCache", [&](auto tag) {
    using T = decltype(tag);
    const T* in = src.data<T>();
    T* out = dst.data<T>();
    for (int64_t i = 0; i < bh; ++i) std::copy_n(in + (i * s + from) * d, d, out + (i * t + to) * d);
  });
}

}  // namespace

KVCache::Attended KVCache::extend(const Tensor& k_new, const Tensor& v_new) {
  const int64_t t = k_new.size(2);
  Attended out;
  if (ring == 0 && grad_enabled()) {
    // A graph may hold what attention reads: a fresh tensor every step.
    const auto filled = [&](const Tensor& x) { return x.size(2) == seen ? x : narrow(x, 2, 0, seen); };
    out.k = seen > 0 ? concat({filled(k), k_new}, 2) : k_new;  // (B,Hkv,T_past+T,d)
    out.v = seen > 0 ? concat({filled(v), v_new}, 2) : v_new;
    k = out.k.detach();
    v = out.v.detach();
    seen += t;
    return out;
  }
  if (ring == 0) return extend_in_place(k_new, v_new);
  if (!k.defined()) {
    k = Tensor::zeros({k_new.size(0), k_new.size(1), ring, k_new.size(3)}, k_new.dtype());
    v = Tensor::zeros(k.shape(), k_new.dtype());
    slot_positions.assign(static_cast<size_t>(ring), -1);
  }
  out.k = concat({k, k_new}, 2);  // (B,Hkv,ring+T,d)
  out.v = concat({v, v_new}, 2);
  out.positions = slot_positions;
  for (int64_t r = 0; r < t; ++r) out.positions.push_back(seen + r);
  // Then the new positions take their slots; of a long prompt only the last ring - globals
  // (and the leading globals) are worth writing.
  const int64_t rolling = ring - globals;
  for (int64_t r = 0; r < t; ++r) {
    const int64_t p = seen + r;
    if (p >= globals && p < seen + t - rolling) continue;
    const int64_t slot = p < globals ? p : globals + (p - globals) % rolling;
    copy_position(k_new, r, k, slot);
    copy_position(v_new, r, v, slot);
    slot_positions[static_cast<size_t>(slot)] = p;
  }
  seen += t;
  return out;
}

// Decoding without gradients: the positions go into buffers that double when full, and
// attention reads the buffers whole, the slots past the last position hidden. A step copies
// only its own keys and values, not the whole cache (which would make generation quadratic in
// its length), and its tensors keep their sizes from one doubling to the next.
KVCache::Attended KVCache::extend_in_place(const Tensor& k_new, const Tensor& v_new) {
  const int64_t t = k_new.size(2), need = seen + t;
  if (!k.defined() || k.size(2) < need) {
    const int64_t capacity = std::max(need, k.defined() ? 2 * k.size(2) : int64_t{64});
    Tensor k_grown = Tensor::zeros({k_new.size(0), k_new.size(1), capacity, k_new.size(3)}, k_new.dtype());
    Tensor v_grown = Tensor::zeros(k_grown.shape(), k_new.dtype());
    for (int64_t p = 0; p < seen; ++p) {
      copy_position(k, p, k_grown, p);
      copy_position(v, p, v_grown, p);
    }
    k = k_grown;
    v = v_grown;
  }
  for (int64_t r = 0; r < t; ++r) {
    copy_position(k_new, r, k, seen + r);
    copy_position(v_new, r, v, seen + r);
  }
  seen = need;
  Attended out{k, v, std::vector<int64_t>(static_cast<size_t>(k.size(2)), -1)};
  for (int64_t p = 0; p < seen; ++p) out.positions[static_cast<size_t>(p)] = p;
  return out;
}

}  // namespace tinygpt::nn
