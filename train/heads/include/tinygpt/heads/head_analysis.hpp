#pragma once
// Runs a model on probe sequences and scores every attention head (see head_scores.hpp):
// natural-text windows for the positional roles and entropy, and random token sequences
// repeated twice for induction, duplicate-token and the in-context loss drop.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/heads/head_scores.hpp"

namespace tinygpt::heads {

struct HeadProbes {
  std::vector<std::vector<int64_t>> texts;  // windows of real text, all of one length <= context
  std::vector<int64_t> alphabet;            // distinct ids the random sequences are drawn from
  int64_t num_random = 16;                  // repeated random sequences
  int64_t period = 0;                       // length of each copy; 0 = min(context / 2, 32, alphabet)
  int64_t local_window = 4;
  uint64_t seed = 0;
};

struct HeadReport {
  std::vector<HeadScores> heads;  // layer by layer, head by head
  int64_t period = 0;
  double first_copy_loss = 0.0;   // mean next-token loss inside the first copy
  double second_copy_loss = 0.0;  // and inside the second, where copying makes it predictable

  // second_copy_loss / first_copy_loss (0 when the first is 0): ~1 without copying, -> 0 with.
  double second_copy_ratio() const;
  std::string table() const;  // aligned text, one row per head, then the in-context line
  std::string json() const;   // heads_json() as indented text
  // [{"layer":0,"head":0,"role":...,"previous_token":...,"induction":...}, ...]: every score.
  nlohmann::json heads_json() const;
  // {"first_copy_loss":..., "second_copy_loss":..., "ratio": second_copy_ratio()}
  nlohmann::json in_context_json() const;
};

HeadReport analyze_heads(nn::CausalLM& model, const HeadProbes& probes);

// The attention maps (one (H,T,T) tensor per layer) of the model reading `ids`; a layer with
// pruned heads has all-zero maps in its slots from the heads it has left on.
std::vector<Tensor> attention_maps(nn::CausalLM& model, const std::vector<int64_t>& ids);

}  // namespace tinygpt::heads
