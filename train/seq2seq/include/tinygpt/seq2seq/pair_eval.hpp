#pragma once
// How well an encoder-decoder maps sources to targets, and how its cross-attention heads align
// target characters with source characters.
//
// Accuracy decodes greedily (nn::greedy_decode) and compares with the reference target:
//   exact_match    share of pairs whose output is the target exactly
//   char_accuracy  characters equal at the same position, over the longer of output and target
//                  per pair, summed over pairs (so a missing or extra character counts wrong)
// Alignment runs the decoder on the reference target (teacher forcing) and, for each target
// character the task aligns with source characters (data::task_alignment), takes the weight the
// head puts on those characters when its query predicts that target character; a head's score is
// the mean of that over every such character: 1 for a head that reads exactly the aligned source
// character, ~1/S for one that spreads evenly.
#include <string>
#include <vector>

#include "tinygpt/data/pairs.hpp"
#include "tinygpt/nn/encoder_decoder.hpp"

namespace tinygpt::seq2seq {

struct PairAccuracy {
  int64_t pairs = 0;
  double exact_match = 0.0;
  double char_accuracy = 0.0;
  // The first few pairs the model got wrong: source, reference, output (UTF-8).
  struct Miss {
    std::string source, target, output;
  };
  std::vector<Miss> misses;
};

// The first `max_pairs` pairs of `split` (all when 0), decoded in batches of `batch`.
PairAccuracy pair_accuracy(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::Tokenizer& tokenizer, data::Split split,
                           int64_t max_pairs = 0, int64_t batch = 250);

struct CrossHeadScore {
  int64_t layer = 0;
  int64_t head = 0;
  double alignment = 0.0;
};

// Every decoder layer's cross-attention heads, layer by layer, scored on the first `max_pairs`
// pairs of `split` (all when 0) against `task`'s alignment. Empty when `task` has no known
// alignment (a file's pairs).
std::vector<CrossHeadScore> cross_attention_alignment(nn::EncoderDecoder& model,
                                                      const data::PairDataset& data,
                                                      const data::Tokenizer& tokenizer,
                                                      const std::string& task, data::Split split,
                                                      int64_t max_pairs = 0, int64_t batch = 250);

}  // namespace tinygpt::seq2seq
