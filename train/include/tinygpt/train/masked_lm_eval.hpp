#pragma once
// A masked LM (BERT, nn/bert.hpp) scored on a split of a text: the masked-token loss and accuracy
// under a fixed, seeded masking (the same numbers every time), and the pseudo-perplexity (each
// position masked alone, Salazar et al. 2020).
#include <cstdint>

#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/masked_lm.hpp"
#include "tinygpt/nn/bert.hpp"

namespace tinygpt::train {

struct MaskedLMScore {
  double loss = 0.0;      // mean cross-entropy over the masked positions
  double accuracy = 0.0;  // share of them whose most probable token is the original
  int64_t masked = 0;     // positions predicted
  int64_t windows = 0;
};

// The split's non-overlapping windows (TextDataset::window_batch), framed [CLS] ... [SEP] and
// masked as `masking` says from a generator seeded with `seed`, `batch` windows a pass, in eval
// mode. ValueError for a split without a window.
MaskedLMScore score_masked_lm(nn::BertForMaskedLM& model, const data::TextDataset& data,
                              data::Split split, const data::Masking& masking, int64_t batch,
                              uint64_t seed = 0);

// exp of the mean over the tokens of the split's first `max_windows` windows (all when fewer) of
// -log p(token | its window with it alone masked): one pass of a window's length rows per window.
double pseudo_perplexity(nn::BertForMaskedLM& model, const data::TextDataset& data, data::Split split,
                         int64_t max_windows);

}  // namespace tinygpt::train
