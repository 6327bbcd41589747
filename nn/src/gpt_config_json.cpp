// config.json of a GPT, in Hugging Face GPT-2's keys (train/src/gpt2_config.cpp reads it back).
#include <nlohmann/json.hpp>

#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::nn {
namespace {

const char* attention_type_name(const AttentionPattern& p) {
  switch (p.kind) {
    case AttentionPattern::Kind::window: return "sliding_window";
    case AttentionPattern::Kind::strided: return "strided";
    case AttentionPattern::Kind::linear: return "linear";
    case AttentionPattern::Kind::bigbird: return "bigbird";
    case AttentionPattern::Kind::performer: return "performer";
    case AttentionPattern::Kind::full: break;
  }
  return "full";
}

// BigBird's settings, and the random key blocks they draw for each query block of the context
// (AttentionPattern::random_key_blocks), so a reader without tinygpt's draw has the mask.
void add_bigbird_keys(const GPTConfig& c, nlohmann::json& j) {
  const AttentionPattern& p = c.attention;
  j["sliding_window"] = p.window;
  j["global_tokens"] = p.global_tokens;
  j["bigbird_block_size"] = p.block;
  j["bigbird_random_blocks"] = p.random_blocks;
  j["bigbird_seed"] = p.random_blocks_seed;
  nlohmann::json chosen = nlohmann::json::array();
  for (int64_t qb = 0; qb < c.block_size / p.block; ++qb) chosen.push_back(p.random_key_blocks(qb));
  j["bigbird_random_key_blocks"] = chosen;
}

}  // namespace

bool loads_as_gpt2(const GPTConfig& c) {
  return c.position_embedding == nn::PositionEmbedding::learned && c.kv_heads() == c.n_head &&
         c.attention.is_full() && c.scale_attn_weights;
}

std::string gpt_config_json(const GPTConfig& c, const std::string& training_precision) {
  const bool gpt2 = loads_as_gpt2(c);
  nlohmann::json j = {{"architectures", {gpt2 ? kGpt2Architecture : kTinyGptArchitecture}},
                  {"model_type", gpt2 ? kGpt2ModelType : kTinyGptModelType},
                  {"vocab_size", c.vocab_size},
                  {"n_positions", c.block_size},
                  {"n_ctx", c.block_size},
                  {"n_embd", c.n_embd},
                  {"n_layer", c.n_layer},
                  {"n_head", c.n_head},
                  {"n_inner", nullptr},
                  {"activation_function", "gelu_new"},
                  {"layer_norm_epsilon", c.layer_norm_epsilon},
                  {"resid_pdrop", c.dropout},
                  {"embd_pdrop", c.dropout},
                  {"attn_pdrop", c.dropout},
                  {"scale_attn_weights", c.scale_attn_weights},
                  {"scale_attn_by_inverse_layer_idx", false},
                  {"reorder_and_upcast_attn", false},
                  {"tie_word_embeddings", c.tie_weights},
                  {"bias", c.bias},
                  {"position_embedding_type", position_embedding_name(c.position_embedding)},
                  {"rope_theta", c.rope_theta},
                  {"num_key_value_heads", c.kv_heads()},
                  {"attention_type", attention_type_name(c.attention)},
                  {"torch_dtype", "float32"}};
  if (c.attention.kind == AttentionPattern::Kind::window) {
    j["sliding_window"] = c.attention.window;
    j["global_tokens"] = c.attention.global_tokens;
  }
  if (c.attention.kind == AttentionPattern::Kind::strided) j["sparse_stride"] = c.attention.stride;
  if (c.attention.kind == AttentionPattern::Kind::bigbird) add_bigbird_keys(c, j);
  if (c.attention.is_performer()) {
    j["performer_features"] = c.attention.features;
    j["performer_redraw_every"] = c.attention.redraw_every;
  }
  for (const auto& [layer, heads] : c.pruned_heads) j["pruned_heads"][std::to_string(layer)] = heads;
  if (!training_precision.empty()) j["tinygpt_training_precision"] = training_precision;
  return j.dump(2) + "\n";
}

std::string GPT::config_json() const { return gpt_config_json(config_); }

}  // namespace tinygpt::nn
