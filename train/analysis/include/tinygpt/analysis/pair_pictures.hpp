#pragma once
// Pictures of an encoder-decoder reading one pair (seq2seq::pair_attention): heatmap grids and
// the attention explorer page (tinygpt::report draws it). `tinygpt heads` on an encoder-decoder
// and the end of its training run draw them for the first held-out pair.
#include <string>
#include <vector>

#include "tinygpt/analysis/heatmap_set.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/nn/encoder_decoder.hpp"
#include "tinygpt/seq2seq/pair_heads.hpp"

namespace tinygpt::analysis {

// A grid per layer into `pictures`: encoder_layer<L>.png and decoder_layer<L>.png (self-attention)
// and cross_layer<L>.png (target positions down, source positions across).
void draw_pair_heatmaps(const seq2seq::PairAttention& pair, HeatmapSet& pictures);

// The page for `pair` (seq2seq::pair_attention): the encoder's self-attention on its source in
// the main view with the encoder heads' roles, the cross-attention view (where the decoder looks
// in the source while writing each output token; the task's aligned positions marked) with each
// cross-attention head's alignment and, with `ablation`, the exact-match drop without it; and
// from the run's log.jsonl the loss, held-out exact match and alignment at each evaluation.
// Written atomically to `path`.
void save_pair_explorer_page(const std::string& path, const std::string& run_dir,
                             const nn::EncoderDecoder& model, const data::Tokenizer& tokenizer,
                             const seq2seq::PairAttention& pair, const seq2seq::PairHeads& heads,
                             const seq2seq::CrossAblation* ablation);

}  // namespace tinygpt::analysis
