#pragma once
// The masked-LM tests' corpus: a short text said again and again, under the masked-LM tokenizer
// fitted to it, with the masking of that vocabulary.
#include <string>
#include <vector>

#include "tinygpt/data/masked_lm.hpp"

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

}  // namespace tinygpt::testing
