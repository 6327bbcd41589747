#pragma once
// BigBird's keys in a config.json, for a GPT's attention (at the top level) and an
// encoder-decoder's encoder (in its tinygpt_encoder_attention object): sliding_window,
// global_tokens, bigbird_block_size, bigbird_random_blocks, bigbird_seed and
// bigbird_random_key_blocks, the blocks the seed draws for each query block of the context, so a
// reader without tinygpt's draw has the mask.
#include <algorithm>
#include <string>
#include <vector>

#include "json_fields.hpp"
#include "tinygpt/autograd/attention_pattern.hpp"

namespace tinygpt::train::bigbird_json {

using nlohmann::json;

// The random key blocks `p` draws for each of the context's `blocks` query blocks.
inline json drawn_blocks(const AttentionPattern& p, int64_t blocks) {
  json drawn = json::array();
  for (int64_t qb = 0; qb < blocks; ++qb) drawn.push_back(p.random_key_blocks(qb));
  return drawn;
}

// The pattern of BigBird's keys in `j` (all but bigbird_random_key_blocks required).
inline AttentionPattern read(const json& j, const std::string& source) {
  namespace jf = json_fields;
  for (const char* key : {"sliding_window", "bigbird_block_size", "bigbird_random_blocks", "bigbird_seed"}) {
    jf::required(j, key, source);
  }
  return AttentionPattern::bigbird(
      jf::integer(j["sliding_window"], "sliding_window", source, 1, jf::kMaxSize),
      j.contains("global_tokens") ? jf::integer(j["global_tokens"], "global_tokens", source, 0, jf::kMaxSize) : 0,
      jf::integer(j["bigbird_random_blocks"], "bigbird_random_blocks", source, 0, jf::kMaxSize),
      jf::integer(j["bigbird_block_size"], "bigbird_block_size", source, 1, jf::kMaxSize),
      jf::unsigned_integer(j["bigbird_seed"], "bigbird_seed", source));
}

// BigBird's blocks must tile the context (`context` positions, config.json's `context_key`) and
// the random ones fit in it, and the blocks `j` lists must be the ones its seed draws (for
// `p` made bidirectional over the context, as an encoder runs it, when `bidirectional`): a
// reader may take either, and both must give the mask the model was trained with. Checked here
// to name config.json's keys.
inline void check(const json& j, const AttentionPattern& p, int64_t context, const char* context_key,
                  bool bidirectional, const std::string& source) {
  namespace jf = json_fields;
  if (context % p.block != 0) {
    jf::fail(source, "bigbird_block_size {} does not divide {} {} into whole blocks", p.block,
             context_key, context);
  }
  const int64_t blocks = context / p.block;
  if (p.random_blocks > blocks) {
    jf::fail(source, "bigbird_random_blocks {} is more than the context's {} blocks",
             p.random_blocks, blocks);
  }
  if (!j.contains("bigbird_random_key_blocks")) return;
  const AttentionPattern runs = bidirectional ? p.bidirectional_over(context, context_key, "config.json") : p;
  if (j["bigbird_random_key_blocks"] != drawn_blocks(runs, blocks)) {
    jf::fail(source, "bigbird_random_key_blocks differ from the blocks bigbird_seed {} draws",
             p.random_blocks_seed);
  }
}

// An encoder's BigBird (an encoder-decoder's or BERT's) in config.json: this object, in a GPT's
// keys above with attention_type "bigbird"; absent for full attention.
constexpr const char* kEncoderKey = "tinygpt_encoder_attention";

// The object of an encoder's pattern `p`, bidirectional (AttentionPattern::bidirectional_over).
inline json encoder_object(const AttentionPattern& p) {
  return {{"attention_type", "bigbird"},
          {"sliding_window", p.window},
          {"global_tokens", p.global_tokens},
          {"bigbird_block_size", p.block},
          {"bigbird_random_blocks", p.random_blocks},
          {"bigbird_seed", p.random_blocks_seed},
          {"bigbird_random_key_blocks", drawn_blocks(p, p.bidirectional_blocks)}};
}

// The encoder's pattern from its object: BigBird, whose blocks tile the `context` positions of
// max_position_embeddings.
inline AttentionPattern read_encoder_object(const json& j, int64_t context, const std::string& source) {
  namespace jf = json_fields;
  static const std::vector<std::string> kKeys = {
      "attention_type", "sliding_window", "global_tokens", "bigbird_block_size",
      "bigbird_random_blocks", "bigbird_seed", "bigbird_random_key_blocks"};
  if (!j.is_object()) jf::fail(source, "{} must be an object", kEncoderKey);
  for (const auto& item : j.items()) {
    if (std::find(kKeys.begin(), kKeys.end(), item.key()) == kKeys.end()) {
      jf::fail(source, "unknown key '{}' in {}", excerpt(item.key()), kEncoderKey);
    }
  }
  if (j.value("attention_type", json()) != "bigbird") {
    jf::fail(source, "{}'s attention_type is {}; an encoder takes \"bigbird\" (or full, with no {})",
             kEncoderKey, jf::shown(j.value("attention_type", json())), kEncoderKey);
  }
  const AttentionPattern p = read(j, source);
  check(j, p, context, "max_position_embeddings", true, source);
  return p;
}

}  // namespace tinygpt::train::bigbird_json
