#include "tinygpt/autograd/attention_pattern.hpp"

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt {

AttentionPattern AttentionPattern::sliding_window(int64_t window, int64_t global_tokens) {
  AttentionPattern p{Kind::window, window, global_tokens};
  p.validate("AttentionPattern::sliding_window");
  return p;
}

void AttentionPattern::validate(const char* op) const {
  if (kind == Kind::window && window < 1) {
    throw ValueError(fmt::format("{}: a sliding window needs at least 1 key, got {}", op, window));
  }
  if (global_tokens < 0) {
    throw ValueError(fmt::format("{}: global tokens must be >= 0, got {}", op, global_tokens));
  }
  if (kind != Kind::window && global_tokens != 0) {
    throw ValueError(fmt::format("{}: global tokens ({}) need a sliding window", op, global_tokens));
  }
}

std::string AttentionPattern::str() const {
  if (kind == Kind::full) return "full";
  if (kind == Kind::linear) return "linear";
  if (global_tokens == 0) return fmt::format("window {}", window);
  return fmt::format("window {} + {} global tokens", window, global_tokens);
}

}  // namespace tinygpt
