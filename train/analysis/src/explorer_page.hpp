#pragma once
#include <string>
#include <vector>

#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/composition.hpp"
#include "tinygpt/heads/encoder_heads.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/train/bert_files.hpp"

namespace tinygpt::analysis {

// The attention explorer (tinygpt::report) for `picture` and its attention maps (one (H,T,T)
// tensor per layer), the head report (with each head's ablation results when measured) and the
// run's log.jsonl, written atomically to `path`; with `composition`, its top K-composition pairs
// as arrows between heads.
void save_explorer_page(const std::string& path, const std::string& run_dir, const nn::CausalLM& model,
                        const data::Tokenizer& tokenizer, const std::vector<int64_t>& picture,
                        const std::vector<Tensor>& maps, const heads::HeadReport& report,
                        const heads::EachHeadAblation* ablation,
                        const heads::CompositionReport* composition = nullptr);

// An encoder's explorer: `picture` (framed [CLS] ... [SEP]) with every layer's (1,H,T,T) attention
// `maps` (bidirectional), its heads' roles and scores (`ablation`: each head's, when measured),
// and its [MASK] view: at each mask of the picture the model's guesses (`fills`, positions
// counted in the text as train::fill_masks counts them).
void save_encoder_explorer_page(const std::string& path, const std::string& run_dir,
                                const nn::BertForMaskedLM& model, const data::Tokenizer& tokenizer,
                                const std::vector<int64_t>& picture, const std::vector<Tensor>& maps,
                                const std::vector<heads::EncoderHeadScores>& scores,
                                const heads::CopyAblation* ablation,
                                const std::vector<train::MaskFill>& fills);

}  // namespace tinygpt::analysis
