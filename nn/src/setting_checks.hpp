#pragma once
// The checks the model configs' validate() share, each a SettingError naming the field.
#include <fmt/format.h>

#include "tinygpt/autograd/attention_pattern.hpp"
#include "tinygpt/autograd/error.hpp"

namespace tinygpt::nn {

// A size or a number that must be above 0 (NaN is refused too).
template <class T>
void require_positive(const Operation& op, const char* name, T value) {
  if (!(value > T(0))) {
    throw SettingError(op, name, value, fmt::format("{} must be positive, got {}", name, value));
  }
}

// A dropout probability, in [0, 1).
inline void require_dropout(const Operation& op, const char* name, double p) {
  if (!(p >= 0.0 && p < 1.0)) {
    throw SettingError(op, name, p, fmt::format("{} must be in [0, 1), got {}", name, p));
  }
}

// An encoder's self-attention (`name`, an encoder-decoder's or BERT's): full, or BigBird made
// bidirectional over the `context` positions of max_position_embeddings; SettingError naming
// `name` for another pattern, and bidirectional_over's errors.
inline AttentionPattern encoder_self_attention(const Operation& op, const char* name,
                                               const AttentionPattern& p, int64_t context) {
  if (p.is_full()) return p;
  if (p.kind != AttentionPattern::Kind::bigbird) {
    throw SettingError(op, {named(name, p.str()), ": an encoder takes full or bigbird attention"});
  }
  return p.bidirectional_over(context, "max_position_embeddings", op.name.c_str());
}

}  // namespace tinygpt::nn
