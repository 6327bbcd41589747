#pragma once
// What the head analysis, the ablations and the attribution share: the probe batches and the
// losses measured on them.
#include <vector>

#include "tinygpt/heads/head_analysis.hpp"

namespace tinygpt::heads {

// The original numbers of the heads layer `layer` has, in the order its attention holds them:
// fewer than n_head in a layer of a GPT with pruned heads.
std::vector<int64_t> layer_head_numbers(const nn::CausalLM& model, int64_t layer);

// rows (all of one length) as a (B,T) batch of ids.
Tensor batch_of(const std::vector<std::vector<int64_t>>& rows);

// The length of each copy in the repeated-sequence probe (ValueError when two copies do not fit
// the context or a copy would need more distinct tokens than the alphabet has).
int64_t probe_period(int64_t block_size, const HeadProbes& probes);
// probes.num_random sequences of `period` distinct alphabet tokens, each repeated twice; the
// same ones for the same probes.seed.
std::vector<std::vector<int64_t>> repeated_sequences(const HeadProbes& probes, int64_t period);

// Mean next-token loss of positions [first, last) of every row predicting position + 1, from
// the logits (B,T,V) of the batch of rows.
double mean_next_token_loss(const Tensor& logits, const std::vector<std::vector<int64_t>>& rows,
                            int64_t first, int64_t last);

// Mean loss inside the first and inside the second copy of the repeated sequences.
struct CopyLosses {
  double first = 0.0, second = 0.0;
};
CopyLosses copy_losses(const Tensor& logits, const std::vector<std::vector<int64_t>>& repeated,
                       int64_t period);

}  // namespace tinygpt::heads
