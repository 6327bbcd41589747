#pragma once
// Pruning heads for good: a copy of the model without them, laid out as Hugging Face's GPT-2
// prune_heads leaves it. In a layer that loses heads, c_attn keeps the q, k and v columns of the
// heads left (each part shrinks to heads_left x head width, in the heads' order) and c_proj the
// rows they feed; config.pruned_heads records the removed heads in their original numbering,
// which is how GPT-2 prunes a model again when it loads it. The pruned model computes what the
// original computes with those heads' outputs zeroed (zero ablation at blocks.{L}.attn.z).
#include <memory>
#include <vector>

#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::heads {

// The pruned copy (same dtype). ValueError when the model already has pruned heads, has
// grouped-query attention, or `heads` would leave a layer without a head.
std::unique_ptr<nn::GPT> prune_heads(const nn::GPT& model, const std::vector<HeadRef>& heads);

}  // namespace tinygpt::heads
