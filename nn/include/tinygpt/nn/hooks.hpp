#pragma once
// Hook points: named places in a GPT's forward where an activation can be read (cached) or
// replaced (ablation, activation patching), in the spirit of TransformerLens's HookPoint.
// A point is named "blocks.{L}.{point}" (L = layer from 0), with point one of
//
//   resid_pre     (B,T,C)     the block's input
//   attn.q        (B,H,T,d)   queries of every head
//   attn.k        (B,H,T,d)   keys of this forward's positions (a KV cache adds earlier ones
//   attn.v        (B,H,T,d)   after the hook), and values
//   attn.pattern  (B,H,T,Tk)  attention weights after the softmax (before attention dropout)
//   attn.z        (B,H,T,d)   each head's output, weights @ v, before the heads are merged and
//                             projected by c_proj
//   attn_out      (B,T,C)     the attention sublayer's output (after c_proj)
//   resid_mid     (B,T,C)     resid_pre + attn_out
//   mlp_out       (B,T,C)     the MLP sublayer's output
//   resid_post    (B,T,C)     resid_mid + mlp_out, the next block's resid_pre
//
// A hook receives the activation and returns the value the forward continues with: the tensor
// itself to only look, or a replacement of the same shape and dtype built from ops, through
// which gradients flow as through any op. Hooking attn.* makes that layer take the general
// attention path (the fused kernel never holds q, k, v, the pattern or z); with no hook the
// forward is unchanged.
#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::nn {

enum class HookPoint : int {
  resid_pre,
  attn_q,
  attn_k,
  attn_v,
  attn_pattern,
  attn_z,
  attn_out,
  resid_mid,
  mlp_out,
  resid_post,
};
constexpr int kNumHookPoints = 10;

// "attn.q" for HookPoint::attn_q, ...
const char* hook_point_name(HookPoint point);
// "blocks.{layer}.{point}"
std::string hook_name(int64_t layer, HookPoint point);

using Hook = std::function<Tensor(const Tensor& value)>;
using HookId = int64_t;

// The hooks of one block, in registration order per point (each gets the previous one's result).
class LayerHooks {
 public:
  explicit LayerHooks(int64_t layer) : layer_(layer) {}

  bool has(HookPoint point) const { return !hooks_[static_cast<size_t>(point)].empty(); }
  // Whether any attn.q, attn.k, attn.v, attn.pattern or attn.z hook is registered.
  bool attention_hooked() const;
  // `value` passed through the point's hooks; `value` itself when there are none. Throws
  // ShapeError naming the point when a hook returns another shape or dtype.
  Tensor run(HookPoint point, const Tensor& value) const {
    return has(point) ? apply(point, value) : value;
  }

  void add(HookPoint point, HookId id, Hook hook);
  bool remove(HookId id);  // false when no hook has that id here

 private:
  Tensor apply(HookPoint point, const Tensor& value) const;

  int64_t layer_;
  std::array<std::vector<std::pair<HookId, Hook>>, kNumHookPoints> hooks_;
};

// Activations recorded by GPT::run_with_cache, by hook name; detached from the tape.
struct ActivationCache {
  Tensor logits;  // (B,T,V)
  std::vector<std::pair<std::string, Tensor>> activations;  // in the order the forward met them

  bool contains(const std::string& name) const;
  // Throws ValueError naming the point and what the cache holds when it is absent.
  const Tensor& operator[](const std::string& name) const;
};

// Which hook names run_with_cache records; an empty filter records all.
using HookFilter = std::function<bool(const std::string& name)>;

}  // namespace tinygpt::nn
