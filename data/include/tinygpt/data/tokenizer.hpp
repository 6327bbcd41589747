#pragma once
// CharTokenizer: one token per Unicode code point. The vocabulary is the set of distinct code
// points of the training text sorted by code point, so the same text always gives the same ids
// whatever order its characters first appear in.
//
// Saved as tokenizer.json beside checkpoints in the Hugging Face tokenizers format, so that
// `Tokenizer.from_file("tokenizer.json")` (Python, Rust, npm `tokenizers`) encodes any text to
// the same ids: a BPE model with no merges, whose vocabulary is the characters with their ids,
// and no normalizer or pre-tokenizer; the Fuse decoder joins the characters back unchanged.
//   {"version": "1.0", ..., "decoder": {"type": "Fuse"},
//    "model": {"type": "BPE", ..., "vocab": {"\n": 0, " ": 1, "a": 2, "b": 3}, "merges": []}}
// The first format, {"vocab": ["\n", " ", "a", "b"]} (characters in id order), is still read.
//
// Special tokens (a sequence-to-sequence model's "<pad>", "<s>", "</s>") take the first ids, the
// characters follow; tokenizer.json lists them in the vocabulary and as special "added_tokens",
// so Hugging Face's tokenizers encodes "<s>" in a text to its id. encode() reads text as
// characters only (never a special); decode() writes a special's content.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tinygpt::data {

// What a run, a command or a test needs of any tokenizer: text (bytes) to ids and back. The
// character tokenizer below and byte-level BPE (bpe.hpp) implement it.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual int64_t vocab_size() const = 0;
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  // Throws IndexError naming the first id outside [0, vocab_size()) and its position.
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  // The bytes of one id. Throws IndexError when out of range.
  virtual std::string token(int64_t id) const = 0;
  // The Hugging Face tokenizer.json of this tokenizer.
  virtual std::string to_json() const = 0;
};

// A tokenizer shared by a run's task, its checkpoints and its commands (it never changes once
// built, so sharing it is safe across threads).
using TokenizerPtr = std::shared_ptr<const Tokenizer>;

class CharTokenizer : public Tokenizer {
 public:
  // Ids: the specials', then positions in `vocab` after them. Throws ValueError if the vocab is
  // empty, holds a duplicate, or holds a value that is not a Unicode scalar value, or a special is
  // empty, repeated or a single character.
  explicit CharTokenizer(std::vector<char32_t> vocab, std::vector<std::string> specials = {});

  // The distinct code points of `text` (UTF-8) in code-point order, after `specials`. Throws
  // ValueError for empty or invalid UTF-8 text.
  static CharTokenizer fit(std::string_view text, std::vector<std::string> specials = {});

  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  // The characters, in id order from num_specials().
  const std::vector<char32_t>& vocab() const { return vocab_; }
  const std::vector<std::string>& specials() const { return specials_; }
  int64_t num_specials() const { return static_cast<int64_t>(specials_.size()); }
  // The id of the character `c`, or -1 when it is not in the vocabulary.
  int64_t id_of(char32_t c) const;

  // Throws ValueError for invalid UTF-8 or for a character outside the vocabulary; the message
  // names the character (e.g. U+00E9 'é') and its position counted in characters.
  std::vector<int64_t> encode(std::string_view text) const override;
  // Throws IndexError naming the first id outside [0, vocab_size()) and its position.
  std::string decode(const std::vector<int64_t>& ids) const override;
  // The character of one id, as UTF-8. Throws IndexError when out of range.
  std::string token(int64_t id) const override;

  // The Hugging Face tokenizer.json described above (indented, no trailing newline).
  std::string to_json() const override;
  // Parses what to_json writes, or the first {"vocab": [...]} form. Throws ValueError naming the
  // key at fault when the text is not JSON, the vocabulary is not distinct single characters
  // with ids 0..n-1, or the tokenizer would not encode one id per character (merges, a
  // normalizer, a pre-tokenizer, added tokens other than the leading specials, ...).
  static CharTokenizer from_json(std::string_view json_text);

 private:
  std::vector<char32_t> vocab_;
  std::vector<std::string> specials_;
  std::vector<std::string> tokens_;  // UTF-8 of each id, specials first, so decode only appends bytes
  std::unordered_map<char32_t, int64_t> ids_;
};

}  // namespace tinygpt::data
