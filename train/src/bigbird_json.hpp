#pragma once
// BigBird's keys in a config.json, for a GPT's attention (at the top level) and an
// encoder-decoder's encoder (in its tinygpt_encoder_attention object): sliding_window,
// global_tokens, bigbird_block_size, bigbird_random_blocks, bigbird_seed and
// bigbird_random_key_blocks, the blocks the seed draws for each query block of the context, so a
// reader without tinygpt's draw has the mask.
#include <string>

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

}  // namespace tinygpt::train::bigbird_json
