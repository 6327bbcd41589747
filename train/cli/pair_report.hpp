#pragma once
// What train, eval and heads say about an encoder-decoder run: held-out accuracy and the
// cross-attention heads' alignment (tinygpt/seq2seq/pair_eval.hpp).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "tinygpt/analysis/fit_observers.hpp"
#include "tinygpt/seq2seq/pair_eval.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::cli {

using analysis::kFormationPairs;

// "held-out: exact match 0.998, character accuracy 0.999 on 2000 pairs", the best-aligned
// cross-attention head, and a few misses.
void print_pair_summary(const seq2seq::PairAccuracy& accuracy,
                        const std::vector<seq2seq::CrossHeadScore>& alignment, std::FILE* out);

// What tinygpt heads on an encoder-decoder measures and writes.
struct PairHeadsOutput {
  int64_t pairs = 500;     // held-out pairs the heads are scored on
  bool ablate = false;     // exact match without each cross-attention head, and without the aligned ones
  bool json = false;       // one JSON object instead of the tables
  // For the first held-out pair, a grid per layer of the encoder's and the decoder's
  // self-attention and of the cross-attention (target positions down, source positions across)
  // in this folder ("" for none).
  std::string heatmap_dir;
  std::string html;        // the attention explorer page of the first held-out pair ("" for none)
};

// tinygpt heads on an encoder-decoder: the roles of the encoder's and the decoder's
// self-attention heads and each cross-attention head's alignment on the first `out.pairs`
// held-out pairs of the run's data.
void report_pair_heads(const std::string& model_dir, train::LoadedModel& loaded, const PairHeadsOutput& out);

}  // namespace tinygpt::cli
