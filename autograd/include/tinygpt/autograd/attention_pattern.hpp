#pragma once
// Which keys a query may see in causal self-attention, and how it weighs them. Every pattern is
// causal (key j <= query i). `full` sees every earlier key; `linear` too, but weighs them by
// phi(q).phi(k) normalised per row instead of a softmax (causal_linear_attention); `window`
// sees the last `window` keys, itself included (W as Hugging Face Mistral's sliding_window
// counts it), and the first `global_tokens` positions (Longformer's global tokens):
// j <= i and (i - j < W or j < G); `strided` sees the Sparse Transformer's local band of the
// last `stride` keys plus every stride-th key before it: j <= i and (i - j < S or
// (i - j) mod S = 0); `bigbird` sees a window of W keys, the first G positions and, from query
// block i / B (blocks of B positions), R random key blocks at or before it (BigBird's, drawn by
// random_key_blocks). The fused kernel (causal_self_attention) skips the keys no query can see,
// so a window costs O(T (W + G)), a stride O(T (S + T / S)) and BigBird O(T (W + G + R B))
// instead of O(T^2). `performer` is linear attention whose phi is FAVOR+'s positive random
// features (performer_features): `features` of them per head, redrawn every `redraw_every`
// training steps (0: never).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tinygpt {

struct AttentionPattern {
  enum class Kind { full, window, strided, linear, bigbird, performer };
  Kind kind = Kind::full;
  int64_t window = 0;         // W >= 1 keys, for Kind::window and Kind::bigbird
  int64_t global_tokens = 0;  // G >= 0 leading positions every later query sees
  int64_t stride = 0;         // S >= 1, for Kind::strided
  int64_t block = 0;          // B >= 1 positions a block, for Kind::bigbird
  int64_t random_blocks = 0;  // R >= 0 random key blocks per query block, for Kind::bigbird
  uint64_t random_blocks_seed = 0;  // draws the random key blocks, for Kind::bigbird
  int64_t features = 0;       // M >= 1 random features per head, for Kind::performer
  int64_t redraw_every = 0;   // training steps between redraws of the features; 0: never

  static AttentionPattern sliding_window(int64_t window, int64_t global_tokens = 0);
  static AttentionPattern strided_attention(int64_t stride);
  static AttentionPattern linear_attention() { return {Kind::linear, 0, 0, 0, 0, 0, 0, 0, 0}; }
  static AttentionPattern bigbird(int64_t window, int64_t global_tokens, int64_t random_blocks,
                                  int64_t block, uint64_t random_blocks_seed);
  static AttentionPattern performer_attention(int64_t features, int64_t redraw_every = 0);

  bool is_full() const { return kind == Kind::full; }
  // Weights phi(q).phi(k) normalised per row, by running sums: linear attention and Performer.
  bool is_linear() const { return kind == Kind::linear || kind == Kind::performer; }
  bool is_performer() const { return kind == Kind::performer; }
  bool visible(int64_t i, int64_t j) const {
    if (j > i) return false;
    if (kind == Kind::window) return i - j < window || j < global_tokens;
    if (kind == Kind::strided) return i - j < stride || (i - j) % stride == 0;
    if (kind == Kind::bigbird) {
      return i - j < window || j < global_tokens || random_block_seen(i / block, j / block);
    }
    return true;
  }
  // BigBird's random key blocks of query block `query_block`, ascending: the R blocks k <=
  // query_block with the smallest (random_key_rank(query_block, k), k), or all of them when
  // there are no more than R. A function of the seed and the block alone, so the blocks do not
  // depend on the sequence's length.
  std::vector<int64_t> random_key_blocks(int64_t query_block) const;
  // Whether random_key_blocks(query_block) holds key_block, without building the list.
  bool random_block_seen(int64_t query_block, int64_t key_block) const;
  // splitmix64(splitmix64(splitmix64(random_blocks_seed) ^ query_block) ^ key_block): the order
  // in which a query block's candidate key blocks are taken.
  uint64_t random_key_rank(int64_t query_block, int64_t key_block) const;
  // The first key a query at position >= i may see other than the global ones.
  int64_t first_local_key(int64_t i) const {
    return kind != Kind::window ? 0 : std::max<int64_t>(0, i - window + 1);
  }
  // Throws ValueError naming `op` unless window >= 1 (for a window), stride >= 1 (for a
  // stride) and global_tokens >= 0 (and 0 but for a window or BigBird); for BigBird block >= 1
  // and random_blocks >= 0 as well; for Performer features >= 1 and redraw_every >= 0 (both 0
  // but for it).
  void validate(const char* op) const;
  // "full", "linear", "window 256", "window 256 + 4 global tokens", "strided 64",
  // "bigbird: window 32 + 2 global tokens + 3 random blocks of 16",
  // "performer 64 features", "performer 64 features redrawn every 1000 steps"
  std::string str() const;

 private:
  void validate_bigbird(const char* op) const;
  void validate_performer(const char* op) const;
};

}  // namespace tinygpt
