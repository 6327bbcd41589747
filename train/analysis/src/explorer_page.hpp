#pragma once
#include <string>
#include <vector>

#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::analysis {

// The attention explorer (tinygpt::report) for `picture` and its attention maps (one (H,T,T)
// tensor per layer), the head report (with each head's ablation results when measured) and the
// run's log.jsonl, written atomically to `path`.
void save_explorer_page(const std::string& path, const std::string& run_dir, const nn::CausalLM& model,
                        const data::Tokenizer& tokenizer, const std::vector<int64_t>& picture,
                        const std::vector<Tensor>& maps, const heads::HeadReport& report,
                        const heads::EachHeadAblation* ablation);

}  // namespace tinygpt::analysis
