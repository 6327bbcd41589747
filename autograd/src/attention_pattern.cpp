#include "tinygpt/autograd/attention_pattern.hpp"

#include <fmt/format.h>

#include <utility>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt {

AttentionPattern AttentionPattern::sliding_window(int64_t window, int64_t global_tokens) {
  AttentionPattern p{Kind::window, window, global_tokens, 0, 0, 0, 0};
  p.validate("AttentionPattern::sliding_window");
  return p;
}

AttentionPattern AttentionPattern::strided_attention(int64_t stride) {
  AttentionPattern p{Kind::strided, 0, 0, stride, 0, 0, 0};
  p.validate("AttentionPattern::strided_attention");
  return p;
}

AttentionPattern AttentionPattern::bigbird(int64_t window, int64_t global_tokens,
                                           int64_t random_blocks, int64_t block,
                                           uint64_t random_blocks_seed) {
  AttentionPattern p{Kind::bigbird, window, global_tokens, 0, block, random_blocks,
                     random_blocks_seed};
  p.validate("AttentionPattern::bigbird");
  return p;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t AttentionPattern::random_key_rank(int64_t query_block, int64_t key_block) const {
  const uint64_t row = splitmix64(splitmix64(random_blocks_seed) ^ static_cast<uint64_t>(query_block));
  return splitmix64(row ^ static_cast<uint64_t>(key_block));
}

std::vector<int64_t> AttentionPattern::random_key_blocks(int64_t query_block) const {
  std::vector<std::pair<uint64_t, int64_t>> ranked;
  for (int64_t k = 0; k <= query_block; ++k) ranked.emplace_back(random_key_rank(query_block, k), k);
  const auto chosen = static_cast<size_t>(std::min<int64_t>(random_blocks, query_block + 1));
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(chosen),
                    ranked.end());
  std::vector<int64_t> out;
  for (size_t r = 0; r < chosen; ++r) out.push_back(ranked[r].second);
  std::sort(out.begin(), out.end());
  return out;
}

bool AttentionPattern::random_block_seen(int64_t query_block, int64_t key_block) const {
  if (key_block > query_block) return false;
  const std::pair<uint64_t, int64_t> own{random_key_rank(query_block, key_block), key_block};
  int64_t ahead = 0;  // candidates taken before key_block
  for (int64_t k = 0; k <= query_block && ahead < random_blocks; ++k) {
    ahead += std::pair<uint64_t, int64_t>{random_key_rank(query_block, k), k} < own ? 1 : 0;
  }
  return ahead < random_blocks;
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
  if (kind != Kind::window && kind != Kind::bigbird && global_tokens != 0) {
    throw SettingError(Operation(op), "global_tokens", global_tokens,
                       fmt::format("global tokens ({}) need a sliding window", global_tokens));
  }
  if (kind == Kind::bigbird) validate_bigbird(op);
}

// Reported under the settings the CLI names --window, --block-size and --random-blocks.
void AttentionPattern::validate_bigbird(const char* op) const {
  if (window < 1) {
    throw SettingError(Operation(op), "window", window,
                       fmt::format("BigBird's window needs at least 1 key, got {}", window));
  }
  if (block < 1) {
    throw SettingError(Operation(op), "bigbird_block", block,
                       fmt::format("BigBird's blocks need at least 1 position, got {}", block));
  }
  if (random_blocks < 0) {
    throw SettingError(Operation(op), "random_blocks", random_blocks,
                       fmt::format("random blocks must be >= 0, got {}", random_blocks));
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
  if (kind == Kind::bigbird) {
    return fmt::format("bigbird: window {} + {} global tokens + {} random blocks of {}", window,
                       global_tokens, random_blocks, block);
  }
  if (global_tokens == 0) return fmt::format("window {}", window);
  return fmt::format("window {} + {} global tokens", window, global_tokens);
}

}  // namespace tinygpt
