#include "tinygpt/nn/hooks.hpp"

#include <algorithm>

namespace tinygpt::nn {

const char* hook_point_name(HookPoint point) {
  static const char* const names[kNumHookPoints] = {
      "resid_pre",    "attn.q", "attn.k",    "attn.v",  "attn.pattern",
      "attn.z",       "attn_out", "resid_mid", "mlp_out", "resid_post"};
  return names[static_cast<int>(point)];
}

std::string hook_name(int64_t layer, HookPoint point) {
  return fmt::format("blocks.{}.{}", layer, hook_point_name(point));
}

bool LayerHooks::attention_hooked() const {
  for (HookPoint p : {HookPoint::attn_q, HookPoint::attn_k, HookPoint::attn_v,
                      HookPoint::attn_pattern, HookPoint::attn_z}) {
    if (has(p)) return true;
  }
  return false;
}

Tensor LayerHooks::apply(HookPoint point, const Tensor& value) const {
  Tensor out = value;
  for (const auto& [id, hook] : hooks_[static_cast<size_t>(point)]) {
    Tensor next = hook(out);
    if (!next.defined() || next.shape() != out.shape() || next.dtype() != out.dtype()) {
      throw ShapeError(fmt::format(
          "hook {} on {}: returned {} {} for a {} {} value; a hook must keep shape and dtype", id,
          hook_name(layer_, point), next.defined() ? next.shape().str() : "an undefined tensor",
          next.defined() ? dtype_name(next.dtype()) : "", out.shape().str(),
          dtype_name(out.dtype())));
    }
    out = std::move(next);
  }
  return out;
}

void LayerHooks::add(HookPoint point, HookId id, Hook hook) {
  hooks_[static_cast<size_t>(point)].emplace_back(id, std::move(hook));
}

bool LayerHooks::remove(HookId id) {
  for (auto& list : hooks_) {
    const auto it = std::find_if(list.begin(), list.end(), [&](const auto& h) { return h.first == id; });
    if (it != list.end()) {
      list.erase(it);
      return true;
    }
  }
  return false;
}

bool ActivationCache::contains(const std::string& name) const {
  return std::any_of(activations.begin(), activations.end(),
                     [&](const auto& a) { return a.first == name; });
}

const Tensor& ActivationCache::operator[](const std::string& name) const {
  for (const auto& [key, value] : activations) {
    if (key == name) return value;
  }
  std::string held;
  for (const auto& a : activations) held += (held.empty() ? "" : ", ") + a.first;
  throw ValueError(Operation("ActivationCache"),
                   fmt::format("no activation '{}'; it holds [{}]", name, held));
}

}  // namespace tinygpt::nn
