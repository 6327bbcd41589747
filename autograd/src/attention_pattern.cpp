#include "tinygpt/autograd/attention_pattern.hpp"

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt {

AttentionPattern AttentionPattern::sliding_window(int64_t window, int64_t global_tokens) {
  AttentionPattern p{Kind::window, window, global_tokens, 0};
  p.validate("AttentionPattern::sliding_window");
  return p;
}

AttentionPattern AttentionPattern::strided_attention(int64_t stride) {
  AttentionPattern p{Kind::strided, 0, 0, stride};
  p.validate("AttentionPattern::strided_attention");
  return p;
}

AttentionPattern AttentionPattern::performer_attention(int64_t features, int64_t redraw_every) {
  AttentionPattern p;
  p.kind = Kind::performer;
  p.features = features;
  p.redraw_every = redraw_every;
  p.validate("AttentionPattern::performer_attention");
  return p;
}

void AttentionPattern::validate(const char* op) const {
  validate_performer(op);
  if (kind == Kind::window && window < 1) {
    throw SettingError(Operation(op), "window", window,
                       fmt::format("a sliding window needs at least 1 key, got {}", window));
  }
  if (kind == Kind::strided && stride < 1) {
    throw SettingError(Operation(op), "stride", stride,
                       fmt::format("a stride must be at least 1, got {}", stride));
  }
  if (global_tokens < 0) {
    throw SettingError(Operation(op), "global_tokens", global_tokens,
                       fmt::format("global tokens must be >= 0, got {}", global_tokens));
  }
  if (kind != Kind::window && global_tokens != 0) {
    throw SettingError(Operation(op), "global_tokens", global_tokens,
                       fmt::format("global tokens ({}) need a sliding window", global_tokens));
  }
}

void AttentionPattern::validate_performer(const char* op) const {
  if (kind == Kind::performer && features < 1) {
    throw SettingError(Operation(op), {named("features", features),
                                       ": Performer needs at least 1 random feature per head"});
  }
  if (kind != Kind::performer && features != 0) {
    throw SettingError(Operation(op), {named("features", features),
                                       ": random features are Performer attention's"});
  }
  if (redraw_every < 0) {
    throw SettingError(Operation(op), {named("redraw_every", redraw_every),
                                       ": the steps between redraws must be >= 0 (0: never)"});
  }
  if (kind != Kind::performer && redraw_every != 0) {
    throw SettingError(Operation(op), {named("redraw_every", redraw_every),
                                       ": only Performer attention has features to redraw"});
  }
}

std::string AttentionPattern::str() const {
  if (kind == Kind::performer) {
    const std::string redraw =
        redraw_every > 0 ? fmt::format(" redrawn every {} steps", redraw_every) : "";
    return fmt::format("performer {} features{}", features, redraw);
  }
  if (kind == Kind::full) return "full";
  if (kind == Kind::linear) return "linear";
  if (kind == Kind::strided) return fmt::format("strided {}", stride);
  if (global_tokens == 0) return fmt::format("window {}", window);
  return fmt::format("window {} + {} global tokens", window, global_tokens);
}

}  // namespace tinygpt
