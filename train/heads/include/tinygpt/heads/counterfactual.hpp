#pragma once
// Attention's counterfactuals (Jain & Wallace 2019, "Attention is not Explanation"): if another
// attention pattern gives the same prediction, the pattern does not explain it. For each head
// its pattern (the attn.pattern hook point) is replaced, on the probe windows, by
//   (a) the uniform pattern over the keys each query may see,
//   (b) a seeded permutation of each query's weights among those keys,
// and the mean total variation of the next-token distribution over every position is measured;
// and (c) gradient ascent looks for the pattern farthest from the original in Jensen-Shannon
// divergence (mean over the queries, natural log: at most ln 2) that moves no prediction of the
// window by more than epsilon in total variation. A head whose attention can be swapped for a
// very different one at little cost is not explained by where it looks.
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::heads {

struct CounterfactualOptions {
  double epsilon = 0.05;  // the total variation every prediction must stay within, for (c)
  int64_t steps = 40;     // of gradient ascent, for (c)
  uint64_t seed = 0;      // the permutations of (b)
};

struct HeadCounterfactual {
  HeadRef head;
  double uniform_tvd = 0.0;
  double permuted_tvd = 0.0;
  double adversarial_jsd = 0.0;  // mean over windows of the largest JSD found within epsilon
};

// Every head, layer by layer, on `windows` (all of one length). The model runs in eval mode and
// is left with no hook and zeroed gradients. ValueError for an epsilon outside (0, 1] or no window.
std::vector<HeadCounterfactual> attention_counterfactuals(nn::GPT& model,
                                                          const std::vector<std::vector<int64_t>>& windows,
                                                          const CounterfactualOptions& options = {});

// [{"layer", "head", "uniform_tvd", "permuted_tvd", "adversarial_jsd"}]
nlohmann::json counterfactual_json(const std::vector<HeadCounterfactual>& heads);

}  // namespace tinygpt::heads
