#pragma once
// CharTokenizer: one token per Unicode code point. The vocabulary is the set of distinct code
// points of the training text sorted by code point, so the same text always gives the same ids
// whatever order its characters first appear in.
//
// Saved as tokenizer.json beside checkpoints, in exactly this form (characters in id order):
//   {"vocab": ["\n", " ", "a", "b"]}
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tinygpt::data {

class CharTokenizer {
 public:
  // Ids are positions in `vocab`. Throws ValueError if it is empty, holds a duplicate, or holds
  // a value that is not a Unicode scalar value.
  explicit CharTokenizer(std::vector<char32_t> vocab);

  // The distinct code points of `text` (UTF-8) in code-point order. Throws ValueError for empty
  // or invalid UTF-8 text.
  static CharTokenizer fit(std::string_view text);

  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  const std::vector<char32_t>& vocab() const { return vocab_; }

  // Throws ValueError for invalid UTF-8 or for a character outside the vocabulary; the message
  // names the character (e.g. U+00E9 'é') and its position counted in characters.
  std::vector<int64_t> encode(std::string_view text) const;
  // Throws IndexError naming the first id outside [0, vocab_size()) and its position.
  std::string decode(const std::vector<int64_t>& ids) const;
  // The character of one id, as UTF-8. Throws IndexError when out of range.
  std::string token(int64_t id) const;

  // {"vocab": [...]} on one line, no trailing newline.
  std::string to_json() const;
  // Parses what to_json writes. Throws ValueError when the text is not JSON, "vocab" is missing,
  // there are other keys, or "vocab" is not a non-empty list of distinct one-character strings.
  static CharTokenizer from_json(std::string_view json_text);

 private:
  std::vector<char32_t> vocab_;
  std::vector<std::string> tokens_;  // UTF-8 of each id, so decode only appends bytes
  std::unordered_map<char32_t, int64_t> ids_;
};

}  // namespace tinygpt::data
