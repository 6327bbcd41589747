#pragma once
// Head importance (Michel et al. 2019, "Are Sixteen Heads Really Better than One?"): a gate
// xi_h = 1 multiplies each head's output at blocks.{L}.attn.z, before c_proj mixes the heads,
// and a head's importance is the mean over evaluation windows of |dL/dxi_h|, L being the
// window's mean next-token loss: to first order, how much the loss moves when the head is
// removed (xi_h 1 -> 0). Normalised per layer by the layer's l2 norm, as the paper does before
// comparing heads across layers.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/head_analysis.hpp"
#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::heads {

// The window's mean next-token loss (positions 0..T-2 predicting the next) with each layer's
// head outputs multiplied by gates[layer] (one per head the layer has, the model's dtype): differentiable in the
// gates. The hooks are gone when it returns.
Tensor gated_loss(nn::GPT& model, const std::vector<Tensor>& gates, const std::vector<int64_t>& window);

struct HeadImportance {
  HeadRef head;
  double raw = 0.0;         // mean |dL/dxi|
  double normalised = 0.0;  // raw / l2 norm of its layer's raws
};

// Every head the model has (a pruned head has none), layer by layer, over `windows` (each at least 2 tokens; ValueError without any).
// The model runs in eval mode; its parameters' gradients are left zeroed.
std::vector<HeadImportance> head_importance(nn::GPT& model,
                                            const std::vector<std::vector<int64_t>>& windows);

// The same on the in-context probe (random sequences said twice, as analyze_heads makes them from
// `probes`): where copying is the job, so the heads that copy are measured where they work.
std::vector<HeadImportance> in_context_importance(nn::GPT& model, const HeadProbes& probes);

// [{"layer", "head", "raw", "normalised"}]
nlohmann::json importance_json(const std::vector<HeadImportance>& importance);

}  // namespace tinygpt::heads
