#pragma once
// What a masked language model (BERT-style, nn/bert.hpp) reads: characters with BERT's five
// special tokens, sequences framed [CLS] ... [SEP], and BERT's masking of the positions to predict.
//
// MaskedLMTokenizer: ids 0..4 are [PAD] [UNK] [CLS] [SEP] [MASK], the characters follow in
// code-point order. Its tokenizer.json is the character tokenizer's (tokenizer.hpp) with the
// specials as added tokens, "[UNK]" as the model's unk_token (a character outside the vocabulary
// encodes to it) and a TemplateProcessing post-processor "[CLS] $A [SEP]", so Hugging Face's
// tokenizers frames an encoding as frame() does.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/tensor.hpp"
#include "tinygpt/data/tokenizer.hpp"

namespace tinygpt::data {

class MaskedLMTokenizer : public Tokenizer {
 public:
  static constexpr int64_t kPad = 0, kUnk = 1, kCls = 2, kSep = 3, kMask = 4;
  static const std::vector<std::string>& special_tokens();  // in id order

  // The characters of `vocab` take ids from 5 on (CharTokenizer's checks apply).
  explicit MaskedLMTokenizer(std::vector<char32_t> vocab);
  // The distinct code points of `text` (UTF-8).
  static MaskedLMTokenizer fit(std::string_view text);

  int64_t vocab_size() const override { return chars_.vocab_size(); }
  // One id per character; a special written out ("[MASK]") is that special, and a character
  // outside the vocabulary is [UNK]. Throws ValueError for invalid UTF-8. Not framed.
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override { return chars_.decode(ids); }
  std::string token(int64_t id) const override { return chars_.token(id); }
  std::string to_json() const override;
  // Parses what to_json writes. Throws ValueError naming the key at fault otherwise.
  static MaskedLMTokenizer from_json(std::string_view json_text);

  // [CLS] ids [SEP]
  static std::vector<int64_t> frame(const std::vector<int64_t>& ids);
  // Each row of windows (B,T) i64 framed: (B,T+2).
  static Tensor frame(const Tensor& windows);
  const CharTokenizer& characters() const { return chars_; }

 private:
  CharTokenizer chars_;
};

// BERT's masking: each maskable position is chosen with `probability`; of the chosen, 80% become
// [MASK], 10% a random character (ids from first_character on) and 10% stay. Only chosen
// positions are predicted.
struct Masking {
  double probability = 0.15;
  int64_t mask_id = MaskedLMTokenizer::kMask;
  int64_t first_character = 5;  // ids below are specials: never chosen, never drawn
  int64_t vocab_size = 0;
};

struct MaskedBatch {
  Tensor inputs;  // (B,T) i64: the tokens after masking
  Tensor labels;  // (B,T) i64: the original token at chosen positions, -100 elsewhere
  int64_t chosen = 0;
};

// Masks `tokens` (B,T) i64. Draws three uniforms per position whatever happens, so a run that
// resumes from the generator's state masks exactly as the uninterrupted one. A row with
// maskable positions but none chosen gets the one whose draw came lowest: every row predicts
// something. Throws SettingError for a probability outside (0, 1].
MaskedBatch mask_tokens(const Tensor& tokens, const Masking& masking, Generator& gen);

}  // namespace tinygpt::data
