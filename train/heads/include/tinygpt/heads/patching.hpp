#pragma once
// Activation patching, the clean/corrupted experiment. Clean: random sequences said twice (the
// in-context probe of analyze_heads); corrupted: the same second copy after a different first
// copy, so the model cannot copy. An activation of the clean run is patched into the corrupted
// one, and recovery = (metric_patched - metric_corrupted) / (metric_clean - metric_corrupted),
// the metric being the mean log-probability of the correct second-copy tokens (1: the patch
// restores all of the copying, 0: none).
//
// Path patching sends the clean difference of some writer heads' outputs (their output through
// c_proj, clean minus corrupted) into the queries, keys or values of some reader heads only,
// every other path left corrupted: patching the previous-token head into the induction heads'
// keys alone is the K-composition path of the induction circuit.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/head_analysis.hpp"

namespace tinygpt::heads {

struct PatchRecovery {
  HeadRef head;
  double recovery = 0.0;
};

struct GroupRecovery {
  std::string role;
  std::vector<HeadRef> heads;  // every head of that role, patched together
  double recovery = 0.0;
};

struct ResidualRecovery {
  int64_t layer = 0;         // resid_pre of this block; n_layer: the last block's resid_post
  int64_t first = 0, last = 0;  // positions [first, last)
  double recovery = 0.0;
};

enum class PathInput { q, k, v };
const char* path_input_name(PathInput input);  // "q", "k", "v"

struct PathRecovery {
  std::vector<HeadRef> from, to;
  PathInput input = PathInput::k;
  double recovery = 0.0;
};

struct PatchingReport {
  int64_t period = 0;
  double clean_metric = 0.0, corrupted_metric = 0.0;
  std::vector<PatchRecovery> heads;        // every head, layer by layer
  std::vector<GroupRecovery> roles;        // the previous-token and the induction heads
  std::vector<ResidualRecovery> residual;  // every layer (and the end), every band
  std::vector<PathRecovery> paths;         // q, k and v, when the roles have such a pair

  // {"clean_metric", "corrupted_metric", "patching": [{"layer", "head", "recovery"}],
  //  "role_patching": [{"role", "heads": [[l, h]...], "recovery"}],
  //  "residual_patching": [{"layer", "positions": [first, last], "recovery"}],
  //  "path_patching": [{"from": [[l, h]...], "to": [[l, h]...], "input", "recovery"}]}
  nlohmann::json json() const;
  std::string table() const;
};

// Patches over the in-context probe of `probes`. The paths run from every head `report` calls
// previous-token into every induction head of a later layer (none when there is no such pair, or
// with RoPE, whose keys turn by position after the projection). The model runs in eval mode
// without gradients and is left with no hook.
PatchingReport patch_heads(nn::GPT& model, const HeadProbes& probes, const HeadReport& report);

}  // namespace tinygpt::heads
