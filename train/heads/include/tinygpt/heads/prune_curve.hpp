#pragma once
// The pruning curve (Michel et al. 2019): heads removed one after another (zeroed at
// blocks.{L}.attn.z, as a pruned model computes), measuring after each the loss on the held-out
// probe windows and the in-context ratio (second / first copy loss), in three orders: least
// important first (importance.hpp), least ablation effect first (each head's own ablated text
// loss), and a seeded random order, the baseline either must beat. Importance orders by the
// per-layer normalised score, as the paper prunes across layers.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/importance.hpp"

namespace tinygpt::heads {

struct PruneCurve {
  std::string order;              // "importance", "ablation", "random"
  std::vector<HeadRef> removed;   // in removal order, every head
  std::vector<double> loss;       // [k]: with the first k removed, k = 0..heads
  std::vector<double> second_copy_ratio;
};

// `ablation` must be in zero mode; `importance` and `each` (ablation.each_head()) layer by
// layer as they return them.
std::vector<PruneCurve> prune_curves(HeadAblation& ablation, const std::vector<HeadImportance>& importance,
                                     const std::vector<AblationResult>& each, uint64_t seed = 0);

// How far each head's removal alone moves the output: the l2 norm of the change of the logits
// at a position, averaged over every position of `windows` (all of one length), layer by layer.
struct OutputChange {
  HeadRef head;
  double l2 = 0.0;
};
std::vector<OutputChange> output_change_per_head(nn::GPT& model, const std::vector<std::vector<int64_t>>& windows);
nlohmann::json output_change_json(const std::vector<OutputChange>& changes);  // [{"layer", "head", "l2"}]

// {"importance": {"removed": [[l, h]...], "loss": [...], "second_copy_ratio": [...]}, ...}
nlohmann::json prune_curves_json(const std::vector<PruneCurve>& curves);

}  // namespace tinygpt::heads
