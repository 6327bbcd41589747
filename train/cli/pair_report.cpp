#include "pair_report.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tinygpt::cli {

nlohmann::json pair_record(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::CharTokenizer& tokenizer, const std::string& task,
                           data::Split split, int64_t max_pairs) {
  const seq2seq::PairAccuracy accuracy = seq2seq::pair_accuracy(model, data, tokenizer, split, max_pairs);
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& h : seq2seq::cross_attention_alignment(model, data, tokenizer, task, split, max_pairs)) {
    heads.push_back({{"layer", h.layer}, {"head", h.head}, {"alignment", h.alignment}});
  }
  return {{"exact_match", accuracy.exact_match},
          {"char_accuracy", accuracy.char_accuracy},
          {"pairs", accuracy.pairs},
          {"cross_attention", heads}};
}

void print_pair_summary(const seq2seq::PairAccuracy& accuracy,
                        const std::vector<seq2seq::CrossHeadScore>& alignment, std::FILE* out) {
  fmt::print(out, "held-out: exact match {:.4f}, character accuracy {:.4f} on {} pairs\n",
             accuracy.exact_match, accuracy.char_accuracy, accuracy.pairs);
  if (!alignment.empty()) {
    const auto best = std::max_element(alignment.begin(), alignment.end(),
                                       [](const auto& a, const auto& b) { return a.alignment < b.alignment; });
    fmt::print(out, "best-aligned cross-attention head: layer {} head {}, alignment {:.3f}\n",
               best->layer, best->head, best->alignment);
  }
  for (const auto& miss : accuracy.misses) {
    fmt::print(out, "  miss: {} -> {} (expected {})\n", miss.source, miss.output, miss.target);
  }
}

}  // namespace tinygpt::cli
