#pragma once
// Keys and values of the positions already processed, for incremental decoding.
#include <cstdint>
#include <vector>

#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::nn {

// By default every position stays and the cache grows with the text. A ring cache (ring > 0
// slots) keeps the first `globals` positions and the newest ring - globals, each new position
// overwriting the oldest of those: a sliding window of W keys with G global tokens needs
// W + G slots however long the text. A recurrent cache keeps no keys at all but linear
// attention's running sums, (d,d) + d per key/value head. GPT::make_cache picks the kind.
struct KVCache {
  // (B,Hkv,slots,d): kv_heads heads, RoPE applied; undefined at first. A growing cache's slots
  // [0, seen) hold positions 0..seen-1; decoding without gradients leaves spare slots after them.
  Tensor k, v;
  int64_t seen = 0;     // positions processed: the absolute position of the next one
  int64_t ring = 0;     // slots of a ring cache; 0 for one that grows
  int64_t globals = 0;  // leading positions a ring cache never overwrites
  std::vector<int64_t> slot_positions;  // a ring cache's position per slot, -1 while empty
  bool recurrent = false;  // linear attention's state in s and z instead of k and v
  Tensor s, z;  // (B,Hkv,d,d) sum phi(k_j) v_j^T and (B,Hkv,d,1) sum phi(k_j); undefined at first


  // What `t` new positions attend over: keys and values (B,Hkv,Tk,d) with the new ones last,
  // and for a ring cache each key's position (empty when key k sits at position k, the
  // growing cache's order). The new positions are recorded.
  struct Attended {
    Tensor k, v;
    std::vector<int64_t> positions;
  };
  Attended extend(const Tensor& k_new, const Tensor& v_new);

 private:
  Attended extend_in_place(const Tensor& k_new, const Tensor& v_new);
};

}  // namespace tinygpt::nn
