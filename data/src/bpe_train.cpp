// Training a byte-level BPE vocabulary: counts of adjacent pairs within the distinct pre-tokens,
// kept up to date merge by merge, and a heap of the pairs by count.
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/bpe.hpp"

namespace tinygpt::data {

namespace {

uint64_t key_of(int32_t left, int32_t right) {
  return static_cast<uint64_t>(left) << 32 | static_cast<uint32_t>(right);
}

// The pair to merge next: the highest count, and among equal counts the smallest key, i.e. the
// smallest left id, then the smallest right id.
struct Candidate {
  int64_t count;
  uint64_t key;
  bool operator<(const Candidate& other) const {
    return count != other.count ? count < other.count : key > other.key;
  }
};

// The distinct pre-tokens of the text, each a sequence of token ids, with how often each occurs;
// the counts of adjacent pairs over them; and which words hold each pair (a word may be listed
// more than once, or after it lost the pair: merging checks).
class PairCounts {
 public:
  explicit PairCounts(std::string_view text) {
    std::unordered_map<std::string_view, int64_t> occurrences;
    for (const std::string_view piece : gpt2_pre_tokens(text)) ++occurrences[piece];
    for (const auto& [piece, count] : occurrences) {
      std::vector<int32_t> symbols;
      for (const char byte : piece) symbols.push_back(static_cast<unsigned char>(byte));
      add_word(std::move(symbols), count);
    }
    for (const auto& [key, count] : counts_) heap_.push({count, key});
  }

  // The most frequent pair still present, or false when none is left.
  bool best(uint64_t& key) {
    while (!heap_.empty()) {
      const Candidate top = heap_.top();
      heap_.pop();
      const auto it = counts_.find(top.key);
      const int64_t now = it == counts_.end() ? 0 : it->second;
      if (now == top.count) {
        key = top.key;
        return true;
      }
      if (now > 0) heap_.push({now, top.key});  // counts of a pair only fall: re-file it lower
    }
    return false;
  }

  // Every occurrence of the pair `key` becomes the token `merged`, left to right.
  void merge(uint64_t key, int32_t merged) {
    const auto left = static_cast<int32_t>(key >> 32), right = static_cast<int32_t>(key & 0xFFFFFFFFu);
    std::vector<uint32_t> holders = std::move(holders_[key]);
    holders_.erase(key);
    std::unordered_map<uint64_t, bool> created;
    for (const uint32_t w : holders) {
      std::vector<int32_t>& symbols = words_[w];
      std::vector<int32_t> next;
      next.reserve(symbols.size());
      for (size_t i = 0; i < symbols.size(); ++i) {
        const bool pair = i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right;
        next.push_back(pair ? merged : symbols[i]);
        i += pair ? 1 : 0;
      }
      if (next.size() == symbols.size()) continue;  // listed twice, merged already
      count_pairs(w, -1);
      symbols = std::move(next);
      count_pairs(w, +1);
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        if (symbols[i] != merged && symbols[i + 1] != merged) continue;
        const uint64_t k = key_of(symbols[i], symbols[i + 1]);
        holders_[k].push_back(w);
        created[k] = true;
      }
    }
    counts_.erase(key);
    for (const auto& item : created) heap_.push({counts_[item.first], item.first});
  }

 private:
  void add_word(std::vector<int32_t> symbols, int64_t count) {
    const auto w = static_cast<uint32_t>(words_.size());
    words_.push_back(std::move(symbols));
    word_counts_.push_back(count);
    count_pairs(w, +1);
    const std::vector<int32_t>& s = words_.back();
    for (size_t i = 0; i + 1 < s.size(); ++i) holders_[key_of(s[i], s[i + 1])].push_back(w);
  }

  void count_pairs(uint32_t w, int sign) {
    const std::vector<int32_t>& s = words_[w];
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      int64_t& count = counts_[key_of(s[i], s[i + 1])];
      count += sign * word_counts_[w];
    }
  }

  std::vector<std::vector<int32_t>> words_;
  std::vector<int64_t> word_counts_;
  std::unordered_map<uint64_t, int64_t> counts_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> holders_;
  std::priority_queue<Candidate> heap_;
};

}  // namespace

BpeTokenizer train_bpe(std::string_view text, int64_t vocab_size) {
  if (vocab_size < 256 || vocab_size >= (int64_t{1} << 31)) {
    throw ValueError(Operation("train_bpe"), fmt::format("vocab_size {} must be in [256, 2^31): the 256 bytes come first",
                                 vocab_size));
  }
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int32_t> ids;
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(1, static_cast<char>(b));
    ids.emplace(tokens.back(), b);
  }
  std::vector<BpeMerge> merges;
  PairCounts pairs(text);
  uint64_t key = 0;
  while (static_cast<int64_t>(tokens.size()) < vocab_size && pairs.best(key)) {
    const BpeMerge merge{static_cast<int64_t>(key >> 32), static_cast<int64_t>(key & 0xFFFFFFFFu)};
    // Two merges may make the same bytes ("ab c", "a bc"): they share one id, as a vocabulary
    // of {text: id} (tokenizer.json) can hold each text once.
    const auto [it, added] = ids.emplace(tokens[merge.left] + tokens[merge.right], static_cast<int32_t>(tokens.size()));
    if (added) tokens.push_back(it->first);
    merges.push_back(merge);
    pairs.merge(key, it->second);
  }
  return BpeTokenizer(std::move(tokens), std::move(merges));
}

}  // namespace tinygpt::data
