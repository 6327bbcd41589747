#pragma once
// The masked-LM tests' corpus: a short text said again and again, under the masked-LM tokenizer
// fitted to it, with the masking of that vocabulary.
#include <string>
#include <vector>

#include "tinygpt/data/masked_lm.hpp"
#include "tinygpt/nn/bert.hpp"

namespace tinygpt::testing {

struct MaskedText {
  static inline const std::string kText =
      "the cat sat on the mat. the dog sat on the log. the cat saw the dog. the dog saw the cat. ";
  data::MaskedLMTokenizer tok = data::MaskedLMTokenizer::fit(kText);
  std::vector<int64_t> ids;
  data::Masking masking;

  explicit MaskedText(int repeats) {
    const std::vector<int64_t> once = tok.encode(kText);
    for (int i = 0; i < repeats; ++i) ids.insert(ids.end(), once.begin(), once.end());
    masking.vocab_size = tok.vocab_size();
  }
};

// A BERT small enough to train in a blink: heads of width 8, a feed-forward twice the width.
inline nn::BertConfig small_bert(int64_t vocab, int64_t layers, int64_t hidden, int64_t positions) {
  nn::BertConfig c;
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.num_hidden_layers = layers;
  c.num_attention_heads = hidden / 8;
  c.intermediate_size = 2 * hidden;
  c.max_position_embeddings = positions;
  return c;
}

}  // namespace tinygpt::testing
