#pragma once
// Which keys a query may see in causal self-attention, and how it weighs them. Every pattern is
// causal (key j <= query i). `full` sees every earlier key; `linear` too, but weighs them by
// phi(q).phi(k) normalised per row instead of a softmax (causal_linear_attention); `window`
// sees the last `window` keys, itself included (W as Hugging Face Mistral's sliding_window
// counts it), and the first `global_tokens` positions (Longformer's global tokens):
// j <= i and (i - j < W or j < G); `strided` sees the Sparse Transformer's local band of the
// last `stride` keys plus every stride-th key before it: j <= i and (i - j < S or
// (i - j) mod S = 0). The fused kernel (causal_self_attention) skips the keys no query can see,
// so a window costs O(T (W + G)) and a stride O(T (S + T / S)) instead of O(T^2). `performer`
// is linear attention whose phi is FAVOR+'s positive random features (performer_features):
// `features` of them per head, redrawn every `redraw_every` training steps (0: never).
#include <algorithm>
#include <cstdint>
#include <string>

namespace tinygpt {

struct AttentionPattern {
  enum class Kind { full, window, strided, linear, performer };
  Kind kind = Kind::full;
  int64_t window = 0;         // W >= 1 keys, for Kind::window
  int64_t global_tokens = 0;  // G >= 0 leading positions every later query sees
  int64_t stride = 0;         // S >= 1, for Kind::strided
  int64_t features = 0;       // M >= 1 random features per head, for Kind::performer
  int64_t redraw_every = 0;   // training steps between redraws of the features; 0: never

  static AttentionPattern sliding_window(int64_t window, int64_t global_tokens = 0);
  static AttentionPattern strided_attention(int64_t stride);
  static AttentionPattern linear_attention() { return {Kind::linear, 0, 0, 0}; }
  static AttentionPattern performer_attention(int64_t features, int64_t redraw_every = 0);

  bool is_full() const { return kind == Kind::full; }
  // Weights phi(q).phi(k) normalised per row, by running sums: linear attention and Performer.
  bool is_linear() const { return kind == Kind::linear || kind == Kind::performer; }
  bool is_performer() const { return kind == Kind::performer; }
  bool visible(int64_t i, int64_t j) const {
    if (j > i) return false;
    if (kind == Kind::window) return i - j < window || j < global_tokens;
    if (kind == Kind::strided) return i - j < stride || (i - j) % stride == 0;
    return true;
  }
  // The first key a query at position >= i may see other than the global ones.
  int64_t first_local_key(int64_t i) const {
    return kind != Kind::window ? 0 : std::max<int64_t>(0, i - window + 1);
  }
  // Throws ValueError naming `op` unless window >= 1 (for a window), stride >= 1 (for a
  // stride), features >= 1 and redraw_every >= 0 (for Performer, and 0 but for it) and
  // global_tokens >= 0 (and 0 but for a window).
  void validate(const char* op) const;
  // "full", "linear", "window 256", "window 256 + 4 global tokens", "strided 64",
  // "performer 64 features", "performer 64 features redrawn every 1000 steps"
  std::string str() const;

 private:
  void validate_performer(const char* op) const;
};

}  // namespace tinygpt
