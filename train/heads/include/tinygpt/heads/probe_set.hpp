#pragma once
// What the head analysis runs on: windows of the text a run was validated on (or a text the user
// gives), the random repeated sequences' alphabet, and the picture drawn in the heatmaps. Built
// once per run from its own dataset, so training's tracking, its final report and `tinygpt
// heads` on its checkpoint all probe the same windows.
#include <string>
#include <vector>

#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/heads/head_analysis.hpp"

namespace tinygpt::heads {

struct ProbeSet {
  HeadProbes probes;
  std::vector<int64_t> picture;  // the ids drawn in the heatmaps and the explorer
};

// Why the probes cannot run on a model of `config` ("" when they can). They repeat a random
// sequence of at least 2 distinct characters twice, so they need a context of 4 and a
// vocabulary of 2. Every place that probes heads asks this first.
std::string probe_obstacle(const nn::CausalLMShape& shape);
inline std::string probe_obstacle(const nn::GPTConfig& config) {
  return probe_obstacle(nn::CausalLMShape{config.vocab_size, config.block_size, config.n_layer, config.n_head});
}

// Up to 16 windows of the dataset's validation split (its training split when it has none),
// evenly spread, each cut to its first 512 characters (the scores hold (T,T) weights per layer). The picture is a document of the toy corpus when `data_source` is it (its
// structure shows best), else the first window; at most the context and 64 tokens (legible). A
// TextDataset always has a training window, so there is always a probe. The random sequences
// are drawn from the word pieces (letters and digits) that occur in the dataset's tokens.
ProbeSet dataset_probes(const data::TextDataset& dataset, const data::Tokenizer& tokenizer,
                        const std::string& data_source);
// `ids` (cut to `block`) as the only probe text and the picture; ValueError when shorter than 2.
ProbeSet text_probes(std::vector<int64_t> ids, const data::Tokenizer& tokenizer, int64_t block);

}  // namespace tinygpt::heads
