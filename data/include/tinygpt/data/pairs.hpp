#pragma once
// Source/target pairs for a sequence-to-sequence model: a UTF-8 text of `source<TAB>target`
// lines, or one of the built-in tasks whose alignment between target and source characters is
// known (so cross-attention heads can be scored against it):
//   builtin:reverse  random strings of 8-16 lowercase letters -> the string reversed
//   builtin:sort     random strings of 8-16 lowercase letters -> its letters sorted
//   builtin:dates    "23 November 2026" -> "2026-11-23", or the other way (half of each), years
//                    1900-2099
// A built-in task is a text like a file's (kPairTaskSize distinct pairs from a fixed seed), so a
// run stores and checks it the same way; its last pairs are the held-out split.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/tensor.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/tokenizer.hpp"

namespace tinygpt::data {

inline constexpr const char* kReverseTask = "builtin:reverse";
inline constexpr const char* kSortTask = "builtin:sort";
inline constexpr const char* kDatesTask = "builtin:dates";
inline constexpr int64_t kPairTaskSize = 20000;

// True for the three built-in task names above.
bool is_pair_task(std::string_view source);
// The text of a built-in task: `count` lines of distinct sources, drawn from `seed`. ValueError
// for another name.
std::string generate_pair_task(std::string_view task, uint64_t seed, int64_t count);
// For each target character, the positions of the source characters the task aligns it with
// (empty: none, e.g. a date's "-"), from the task's definition; empty for a name that is not a
// built-in task (a file's alignment is not known).
std::vector<std::vector<int64_t>> task_alignment(std::string_view task, const std::u32string& source,
                                                 const std::u32string& target);

struct TextPair {
  std::string source, target;  // UTF-8
  int64_t line = 0;            // 1-based, in the text it came from
};

// The pairs of a `source<TAB>target` text (a final newline and "\r\n" endings allowed). A line
// with no tab or more than one, an empty side or an empty line is a ValueError naming
// `where`:line.
std::vector<TextPair> parse_pairs(std::string_view text, const std::string& where);

// The special tokens of a sequence-to-sequence vocabulary, ids 0, 1, 2.
inline const std::vector<std::string>& pair_specials() {
  static const std::vector<std::string> specials{"<pad>", "<s>", "</s>"};
  return specials;
}
inline constexpr int64_t kPadId = 0, kBosId = 1, kEosId = 2;
// The characters of every source and target after pair_specials().
CharTokenizer fit_pair_tokenizer(const std::vector<TextPair>& pairs);

// One batch of pairs, padded at the end of each row.
struct PairBatch {
  Tensor source;                        // (B,S) i64, kPadId after each row's length
  std::vector<int64_t> source_lengths;  // (B)
  Tensor inputs;                        // (B,T) i64: kBosId, then the target; kPadId after
  Tensor targets;                       // (B,T) i64: the target, then kEosId; -100 after
  std::vector<int64_t> index;           // each row's pair, within its split
};

// Encoded pairs split into train and held-out (val): the last round(n x val_fraction) pairs.
class PairDataset {
 public:
  // Every pair must fit `max_positions` (the source, and the target plus its start or end
  // token): a ValueError names `where`:line of the first that does not, or the first character
  // the tokenizer lacks. Needs one pair in train and, with val_fraction > 0, one in val.
  PairDataset(const std::vector<TextPair>& pairs, const Tokenizer& tokenizer,
              int64_t max_positions, double val_fraction, const std::string& where);

  int64_t size(Split split) const;  // pairs in the split
  // `rows` pairs of the split drawn uniformly from `gen` (exactly `rows` randint calls).
  PairBatch sample_batch(Split split, int64_t rows, Generator& gen) const;
  // Pairs first .. first + count - 1 of the split, for evaluation.
  PairBatch batch(Split split, int64_t first, int64_t count) const;
  // The encoded source and target (no special tokens) of pair i of the split.
  const std::vector<int64_t>& source(Split split, int64_t i) const;
  const std::vector<int64_t>& target(Split split, int64_t i) const;

 private:
  int64_t begin(Split split) const;
  PairBatch gather(Split split, const std::vector<int64_t>& rows) const;

  std::vector<std::vector<int64_t>> sources_, targets_;
  int64_t train_size_ = 0;
};

}  // namespace tinygpt::data
