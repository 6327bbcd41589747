#pragma once
// Which keys a query may see in causal self-attention, and how it weighs them. Every pattern is
// causal (key j <= query i). `full` sees every earlier key; `linear` too, but weighs them by
// phi(q).phi(k) normalised per row instead of a softmax (causal_linear_attention); `window`
// sees the last `window` keys, itself included (W as Hugging Face Mistral's sliding_window
// counts it), and the first `global_tokens` positions (Longformer's global tokens):
// j <= i and (i - j < W or j < G). The fused kernel (causal_self_attention) skips the keys no
// query of a block can see, so a window costs O(T (W + G)) instead of O(T^2).
#include <algorithm>
#include <cstdint>
#include <string>

namespace tinygpt {

struct AttentionPattern {
  enum class Kind { full, window, linear };
  Kind kind = Kind::full;
  int64_t window = 0;         // W >= 1 keys, for Kind::window
  int64_t global_tokens = 0;  // G >= 0 leading positions every later query sees

  static AttentionPattern sliding_window(int64_t window, int64_t global_tokens = 0);
  static AttentionPattern linear_attention() { return {Kind::linear, 0, 0}; }

  bool is_full() const { return kind == Kind::full; }
  bool is_linear() const { return kind == Kind::linear; }
  bool visible(int64_t i, int64_t j) const {
    return j <= i && (kind != Kind::window || i - j < window || j < global_tokens);
  }
  // The first key a query at position >= i may see other than the global ones.
  int64_t first_local_key(int64_t i) const {
    return kind != Kind::window ? 0 : std::max<int64_t>(0, i - window + 1);
  }
  // Throws ValueError naming `op` unless window >= 1 (for a window) and global_tokens >= 0.
  void validate(const char* op) const;
  std::string str() const;  // "full", "linear", "window 256", "window 256 + 4 global tokens"
};

}  // namespace tinygpt
