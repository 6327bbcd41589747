#pragma once
// The circuit methods of `tinygpt heads` (composition scores, head importance, activation
// patching, attention's counterfactuals, the pruning curve): each runs its heads:: measurement,
// draws its picture into the report's set of heatmaps (none when the set is null), so that the
// set's record knows it, and returns its JSON value and the text the table-form output prints.
#include <string>

#include <nlohmann/json.hpp>

#include "tinygpt/analysis/heatmap_set.hpp"
#include "tinygpt/heads/composition.hpp"
#include "tinygpt/heads/counterfactual.hpp"
#include "tinygpt/heads/head_analysis.hpp"
#include "tinygpt/heads/probe_set.hpp"
#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::analysis {

struct MethodOutput {
  nlohmann::json json;
  std::string text;     // the table, and the picture's path when one was drawn
};

// The composition scores of every head pair (heads::composition_scores); picture composition.png.
MethodOutput composition_output(const heads::CompositionReport& report, HeatmapSet* pictures);

// Head importance on the probe windows and on the in-context probe (heads/importance.hpp), a
// table beside each head's role; JSON {"importance": [...], "importance_in_context": [...]}.
MethodOutput importance_output(nn::GPT& model, const heads::HeadProbes& probes,
                               const heads::HeadReport& report);

// Activation patching on the in-context probe (heads/patching.hpp); pictures patching.png
// (recovery per head) and patching_residual.png (per layer of the residual stream and band).
MethodOutput patching_output(nn::GPT& model, const heads::HeadProbes& probes,
                             const heads::HeadReport& report, HeatmapSet* pictures);

// Attention's counterfactuals on the probe windows (heads/counterfactual.hpp), a table beside
// each head's role.
MethodOutput counterfactual_output(nn::GPT& model, const heads::HeadProbes& probes,
                                   const heads::HeadReport& report,
                                   const heads::CounterfactualOptions& options);

// The pruning curves (heads/prune_curve.hpp) on the probes; picture prune_curve.png.
MethodOutput prune_curve_output(nn::GPT& model, const heads::HeadProbes& probes,
                                HeatmapSet* pictures);

}  // namespace tinygpt::analysis
