// Byte-level BPE: the merges of one pre-token, the chunks of a text encoded in parallel, decode.
#include "tinygpt/data/bpe.hpp"

#include <algorithm>
#include <exception>
#include <functional>
#include <queue>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/threads.hpp"

namespace tinygpt::data {

namespace {

uint64_t pair_key(int64_t left, int64_t right) {
  return static_cast<uint64_t>(left) << 32 | static_cast<uint64_t>(right);
}

// A chunk per thread's share of this many bytes at least: below it, a team costs more than it saves.
constexpr size_t kMinChunkBytes = size_t{1} << 16;
// A chunk's cache forgets everything past this many pre-tokens, so memory stays bounded on text
// that never repeats.
constexpr size_t kMaxCachedPieces = 200000;

// Where chunks may start: at an ASCII byte that is not white space, after a line feed that
// follows another such byte. That line feed is a pre-token of its own whether a chunk ends with
// it or the text goes on (a longer run of white space would be cut differently at a chunk's end:
// "\n\n" there, "\n" "\n" before a word), and the pattern never looks behind, so the pieces of
// each chunk are exactly those of the whole text.
bool ascii_visible(char c) { return c > ' ' && c < 0x7F; }
bool chunk_may_start(std::string_view text, size_t at) {
  return at >= 2 && text[at - 1] == '\n' && ascii_visible(text[at - 2]) && ascii_visible(text[at]);
}

std::vector<std::string_view> chunks_of(std::string_view text, size_t threads) {
  const size_t target = std::max(kMinChunkBytes, text.size() / std::max<size_t>(threads * 4, 1));
  std::vector<std::string_view> chunks;
  size_t start = 0;
  for (size_t at = target; at < text.size(); ++at) {
    if (at - start >= target && chunk_may_start(text, at)) {
      chunks.push_back(text.substr(start, at - start));
      start = at;
    }
  }
  chunks.push_back(text.substr(start));
  return chunks;
}

std::string out_of_range(int64_t id, int64_t size) {
  return fmt::format("id {} is out of range [0, {})", id, size);
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::vector<std::string> tokens, std::vector<BpeMerge> merges, std::vector<AddedToken> added)
    : tokens_(std::move(tokens)), merges_(std::move(merges)), added_(std::move(added)) {
  if (tokens_.size() >= (size_t{1} << 31)) throw ValueError(Operation("BpeTokenizer"), "more than 2^31 tokens");
  std::unordered_map<std::string_view, int64_t> ids;
  for (size_t id = 0; id < tokens_.size(); ++id) ids.emplace(tokens_[id], static_cast<int64_t>(id));
  for (int b = 0; b < 256; ++b) {
    const auto it = ids.find(std::string(1, static_cast<char>(b)));
    if (it == ids.end()) {
      throw ValueError(Operation("BpeTokenizer"), fmt::format("byte 0x{:02X} ('{}') is not a token, so not every text "
                                   "encodes", b, byte_level_chars()[b]));
    }
    byte_ids_[b] = static_cast<int32_t>(it->second);
  }
  for (const AddedToken& token : added_) {
    if (token.id < 0 || token.id >= vocab_size()) {
      throw ValueError(Operation("BpeTokenizer"), "added token \"" + excerpt(token.content) +
                                                     "\": " + out_of_range(token.id, vocab_size()));
    }
  }
  for (size_t rank = 0; rank < merges_.size(); ++rank) {
    const BpeMerge& m = merges_[rank];
    if (m.left < 0 || m.left >= vocab_size() || m.right < 0 || m.right >= vocab_size()) {
      throw ValueError(Operation("BpeTokenizer"), fmt::format("merge {} ({}, {}) names an id outside [0, {})", rank,
                                   m.left, m.right, vocab_size()));
    }
    const std::string joined = tokens_[m.left] + tokens_[m.right];
    const auto it = ids.find(joined);
    if (it == ids.end()) {
      throw ValueError(Operation("BpeTokenizer"), fmt::format("merge {} \"{} {}\" makes \"{}\", which is not a token", rank,
                                   byte_level_text(tokens_[m.left]), byte_level_text(tokens_[m.right]),
                                   excerpt(byte_level_text(joined))));
    }
    // A pair listed twice keeps its first (lowest) rank, as GPT-2's dictionary of ranks does.
    ranks_.emplace(pair_key(m.left, m.right), Rank{static_cast<int32_t>(rank), static_cast<int32_t>(it->second)});
  }
}

const BpeTokenizer::Rank* BpeTokenizer::rank_of(int64_t left, int64_t right) const {
  const auto it = ranks_.find(pair_key(left, right));
  return it == ranks_.end() ? nullptr : &it->second;
}

// The symbols of the piece in a linked list, and a heap of (rank, position) of the pairs that
// can merge: the lowest rank merges first and, among equal pairs, the leftmost, which is GPT-2's
// order (all of the best pair's occurrences, left to right) in n log n steps.
std::vector<int64_t> BpeTokenizer::encode_piece(std::string_view piece) const {
  struct Symbol {
    int64_t id;
    int64_t prev, next;  // -1: none
  };
  const auto n = static_cast<int64_t>(piece.size());
  std::vector<Symbol> symbols(piece.size());
  for (int64_t i = 0; i < n; ++i) {
    symbols[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  using Candidate = std::pair<int32_t, int64_t>;  // rank, position of the left symbol
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  const auto offer = [&](int64_t at) {
    if (at < 0 || symbols[at].next < 0) return;
    if (const Rank* r = rank_of(symbols[at].id, symbols[symbols[at].next].id)) heap.push({r->rank, at});
  };
  for (int64_t i = 0; i + 1 < n; ++i) offer(i);
  while (!heap.empty()) {
    const auto [rank, at] = heap.top();
    heap.pop();
    Symbol& left = symbols[at];
    if (left.id < 0 || left.next < 0) continue;  // merged away meanwhile
    const Rank* r = rank_of(left.id, symbols[left.next].id);
    if (r == nullptr || r->rank != rank) continue;  // a pair that has changed since it was offered
    Symbol& right = symbols[left.next];
    left.id = r->merged;
    right.id = -1;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = at;
    offer(left.prev);
    offer(at);
  }
  std::vector<int64_t> ids;
  for (int64_t i = 0; i >= 0 && i < n; i = symbols[i].next) ids.push_back(symbols[i].id);
  return ids;
}

void BpeTokenizer::encode_chunk(std::string_view chunk, std::vector<int64_t>& out) const {
  std::unordered_map<std::string_view, std::vector<int64_t>> cache;
  for (const std::string_view piece : gpt2_pre_tokens(chunk)) {
    auto it = cache.find(piece);
    if (it == cache.end()) {
      if (cache.size() >= kMaxCachedPieces) cache.clear();
      it = cache.emplace(piece, encode_piece(piece)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view text) const {
  const std::vector<std::string_view> chunks = chunks_of(text, static_cast<size_t>(num_threads()));
  std::vector<std::vector<int64_t>> ids(chunks.size());
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1) if (chunks.size() > 1)
  for (size_t i = 0; i < chunks.size(); ++i) {
    try {
      encode_chunk(chunks[i], ids[i]);
    } catch (...) {
#pragma omp critical(bpe_encode_failure)
      failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  std::vector<int64_t> all;
  size_t total = 0;
  for (const auto& part : ids) total += part.size();
  all.reserve(total);
  for (const auto& part : ids) all.insert(all.end(), part.begin(), part.end());
  return all;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string bytes;
  for (size_t pos = 0; pos < ids.size(); ++pos) {
    if (ids[pos] < 0 || ids[pos] >= vocab_size()) {
      throw IndexError(Operation("BpeTokenizer::decode"), out_of_range(ids[pos], vocab_size()) +
                       fmt::format(" at position {}", pos));
    }
    bytes += tokens_[static_cast<size_t>(ids[pos])];
  }
  return bytes;
}

std::string BpeTokenizer::token(int64_t id) const {
  if (id < 0 || id >= vocab_size()) throw IndexError(Operation("BpeTokenizer::token"), out_of_range(id, vocab_size()));
  return tokens_[static_cast<size_t>(id)];
}

}  // namespace tinygpt::data
