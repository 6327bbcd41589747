#pragma once
// Byte-level BPE, as GPT-2 encodes text: the text's bytes are cut into pre-tokens by GPT-2's
// pattern (gpt2_pre_tokens), and each pre-token, starting as one token per byte, is merged pair by
// pair in the order of the merge list (the lowest rank first; the leftmost of equal pairs first)
// until no listed pair is left. Any bytes encode, invalid UTF-8 included, and decode gives back
// the exact bytes of any id sequence.
//
// Files: GPT-2's own (vocab.json + merges.txt, where each token is written with GPT-2's
// byte-to-character map, byte_level_chars) and a Hugging Face tokenizer.json with a BPE model and
// the ByteLevel pre-tokenizer and decoder, which to_json writes and the `tokenizers` library reads.
// Added tokens ("<|endoftext|>") keep their ids and decode to their text; encode reads text as
// ordinary bytes only, never as an added token (tiktoken's encode_ordinary, gpt-3-encoder).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinygpt/data/tokenizer.hpp"

namespace tinygpt::data {

// GPT-2's byte-to-character map: byte b as the UTF-8 of one printable character (bytes that are
// printable Latin-1 map to themselves; the rest to U+0100.. in byte order), so that a token of any
// bytes is a string of visible characters in vocab.json (a space is "Ġ").
const std::array<std::string, 256>& byte_level_chars();
// The bytes a token written with that map stands for. Throws ValueError naming `where` and the
// character when one is not in the map.
std::string bytes_of_byte_level(std::string_view text, std::string_view where);
std::string byte_level_text(std::string_view bytes);

// GPT-2's pre-tokenizer: the pieces of `text` matched by
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// in order, where \s is Unicode's White_Space (as tiktoken's and Python's regex read it), and
// each run of bytes that is not valid UTF-8 (which no part of the pattern matches) is a piece of
// its own. The pieces join to `text`.
std::vector<std::string_view> gpt2_pre_tokens(std::string_view text);

// One merge: the tokens `left` and `right` side by side become one token.
struct BpeMerge {
  int64_t left, right;
};

// A token every encoder leaves alone: its id and text.
struct AddedToken {
  int64_t id;
  std::string content;
};

class BpeTokenizer : public Tokenizer {
 public:
  // `tokens`: the bytes of each id (ids 0..n-1). `merges`, by rank: each pair's joined bytes must
  // be a token. Every single byte must be a token (so any text encodes). `added`: ids whose text
  // is never produced from text. Throws ValueError naming the entry at fault.
  BpeTokenizer(std::vector<std::string> tokens, std::vector<BpeMerge> merges,
               std::vector<AddedToken> added = {});

  // GPT-2's files: vocab.json ({"token": id}) and merges.txt ("#version" line, then "left right"
  // per line, by rank).
  static BpeTokenizer from_vocab_and_merges(std::string_view vocab_json, std::string_view merges_txt);
  // A Hugging Face tokenizer.json with a BPE model and the ByteLevel pre-tokenizer (no prefix
  // space); anything that would encode differently is refused naming its key. to_json then gives
  // back `json_text` unchanged, so a run stores the very file it was given.
  static BpeTokenizer from_json(std::string_view json_text);

  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  // Parallel over chunks of the text cut where a pre-token must start (OpenMP, the thread count
  // of set_num_threads); each chunk keeps a cache of the pre-tokens it has met.
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  std::string token(int64_t id) const override;
  std::string to_json() const override;

  const std::vector<BpeMerge>& merges() const { return merges_; }
  const std::vector<AddedToken>& added_tokens() const { return added_; }
  // The ids of one pre-token, merged from its bytes without a cache.
  std::vector<int64_t> encode_piece(std::string_view piece) const;

 private:
  struct Rank {
    int32_t rank;
    int32_t merged;
  };
  void encode_chunk(std::string_view chunk, std::vector<int64_t>& out) const;
  const Rank* rank_of(int64_t left, int64_t right) const;

  std::vector<std::string> tokens_;
  std::vector<BpeMerge> merges_;
  std::vector<AddedToken> added_;
  std::array<int32_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, Rank> ranks_;  // (left << 32 | right) -> its rank and merged id
  std::string json_text_;  // the tokenizer.json it was read from; empty when built otherwise
};

// Either kind of tokenizer.json tinygpt reads: byte-level BPE (a ByteLevel pre-tokenizer) or a
// run's character tokenizer (no pre-tokenizer: CharTokenizer::from_json). Their refusals as
// from_json's.
TokenizerPtr tokenizer_from_json(std::string_view json_text);

// True when `a` and `b` encode and decode alike: the same kind, the same bytes for every id
// and, for BPE, the same merges in the same order.
bool same_tokenizer(const Tokenizer& a, const Tokenizer& b);

// Training a byte-level BPE on `text` (GPT-2's pre-tokens; minbpe's and Hugging Face's
// algorithm): ids 0..255 are the bytes in byte order, then each merge adds the pair of adjacent
// tokens that occurs most often within the pre-tokens, until there are `vocab_size` tokens
// or no pair is left. Ties go to the smallest pair of ids (left id first, then right id), so
// the result depends on the text alone. Throws ValueError when vocab_size < 256.
BpeTokenizer train_bpe(std::string_view text, int64_t vocab_size);

}  // namespace tinygpt::data
