// config.json <-> EncoderDecoderConfig, in the keys of Hugging Face's BART family where they mean
// the same. model_type "tinygpt-encoder-decoder" (architecture TinyGPTForConditionalGeneration):
// the model is not BART (docs/SEQ2SEQ.md lists the differences), and the keys that say so
// (normalize_before, scale_embedding, ...) must hold the values tinygpt computes. Unknown keys are
// refused by name, as for a GPT's config.json.
#include <algorithm>
#include <array>
#include <string_view>

#include "bigbird_json.hpp"
#include "json_fields.hpp"
#include "tinygpt/train/checkpoint.hpp"

namespace tinygpt::train {
namespace {

using nlohmann::json;
namespace jf = json_fields;

// Keys that do not change what the model computes.
constexpr std::array<std::string_view, 14> kBartIgnoredKeys = {
    "architectures", "torch_dtype", "transformers_version", "_name_or_path", "use_cache",
    "init_std", "num_hidden_layers", "forced_eos_token_id", "forced_bos_token_id", "max_length",
    "num_beams", "tinygpt_training_precision", "encoder_layerdrop", "decoder_layerdrop"};

// The keys that must hold one value, the one tinygpt's model computes, and why.
struct Fixed {
  const char* key;
  json value;
  const char* why;
};
const std::array<Fixed, 7>& fixed_keys() {
  static const std::array<Fixed, 7> keys{{
      {"is_encoder_decoder", true, "an encoder and a decoder"},
      {"normalize_before", true, "LayerNorm before each sublayer"},
      {"add_final_layer_norm", true, "a final LayerNorm on each stack"},
      {"normalize_embedding", false, "no layernorm_embedding"},
      {"scale_embedding", false, "embeddings not scaled by sqrt(d_model)"},
      {"tie_word_embeddings", true, "the output head is the shared embedding"},
      {"activation_function", "gelu_new", "GELU's tanh form"},
  }};
  return keys;
}

constexpr std::array<const char*, 9> kSizes = {
    "vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
    "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "max_position_embeddings"};
constexpr std::array<const char*, 4> kTokenIds = {"pad_token_id", "bos_token_id", "eos_token_id",
                                                  "decoder_start_token_id"};
// tinygpt's own: whether the decoder has cross-attention, and how it scores.
constexpr const char* kCrossAttentionKey = "tinygpt_cross_attention";
constexpr const char* kCrossScoreKey = "tinygpt_cross_score";
// The encoder's BigBird (bigbird_json.hpp); absent for full attention.
constexpr const char* kEncoderAttentionKey = bigbird_json::kEncoderKey;
constexpr std::array<const char*, 4> kDropouts = {"dropout", "attention_dropout",
                                                  "activation_dropout", "classifier_dropout"};

}  // namespace

std::string config_to_json(const nn::EncoderDecoderConfig& c, const std::string& training_precision) {
  json j = {{"architectures", {kEncoderDecoderArchitecture}},
            {"model_type", kEncoderDecoderModelType},
            {"vocab_size", c.vocab_size},
            {"d_model", c.d_model},
            {"encoder_layers", c.encoder_layers},
            {"decoder_layers", c.decoder_layers},
            {"encoder_attention_heads", c.encoder_attention_heads},
            {"decoder_attention_heads", c.decoder_attention_heads},
            {"encoder_ffn_dim", c.encoder_ffn_dim},
            {"decoder_ffn_dim", c.decoder_ffn_dim},
            {"max_position_embeddings", c.max_position_embeddings},
            {"dropout", c.dropout},
            {"attention_dropout", c.dropout},
            {"activation_dropout", 0.0},
            {"layer_norm_eps", c.layer_norm_epsilon},
            {"init_std", c.init_std},
            {"pad_token_id", c.pad_token_id},
            {"bos_token_id", c.bos_token_id},
            {"eos_token_id", c.eos_token_id},
            {"decoder_start_token_id", c.decoder_start_token_id},
            {"torch_dtype", "float32"}};
  for (const Fixed& f : fixed_keys()) j[f.key] = f.value;
  // Written only when not the Transformer's, so such a run's config.json stays as it was.
  if (!c.cross_attention) j[kCrossAttentionKey] = false;
  if (c.cross_score != nn::AttentionScore::dot) j[kCrossScoreKey] = nn::attention_score_name(c.cross_score);
  if (!c.encoder_attention.is_full()) j[kEncoderAttentionKey] = bigbird_json::encoder_object(c.encoder_pattern());
  if (!training_precision.empty()) j["tinygpt_training_precision"] = training_precision;
  return j.dump(2) + "\n";
}

nn::EncoderDecoderConfig encoder_decoder_config_from_json(const std::string& text,
                                                          const std::string& source) {
  const json j = jf::parse(text, source);
  std::array<int64_t, kSizes.size()> sizes{};
  for (size_t i = 0; i < kSizes.size(); ++i) {
    sizes[i] = jf::integer(jf::required(j, kSizes[i], source), kSizes[i], source, 1, jf::kMaxSize);
  }
  const auto known = [&](const std::string& key) {
    const auto in = [&](const auto& names) {
      return std::find_if(names.begin(), names.end(), [&](const auto& n) { return key == n; }) != names.end();
    };
    return in(kBartIgnoredKeys) || in(kSizes) || in(kTokenIds) || in(kDropouts) || key == "model_type" ||
           key == "layer_norm_eps" || key == kCrossAttentionKey || key == kCrossScoreKey || key == kEncoderAttentionKey ||
           std::any_of(fixed_keys().begin(), fixed_keys().end(), [&](const Fixed& f) { return key == f.key; });
  };
  for (const auto& item : j.items()) {
    if (!known(item.key())) {
      jf::fail(source, "unknown key '{}': tinygpt cannot tell whether it changes the model", excerpt(item.key()));
    }
  }
  if (j.value("model_type", json()) != kEncoderDecoderModelType) {
    jf::fail(source, "model_type is {}, expected \"{}\"", jf::shown(j.value("model_type", json())),
             kEncoderDecoderModelType);
  }
  for (const Fixed& f : fixed_keys()) {
    if (j.contains(f.key) && j[f.key] != f.value) {
      jf::fail(source, "{} is {}, but tinygpt's encoder-decoder computes only {} ({})", f.key,
               jf::shown(j[f.key]), f.value.dump(), f.why);
    }
  }
  nn::EncoderDecoderConfig c;
  c.vocab_size = sizes[0];
  c.d_model = sizes[1];
  c.encoder_layers = sizes[2];
  c.decoder_layers = sizes[3];
  c.encoder_attention_heads = sizes[4];
  c.decoder_attention_heads = sizes[5];
  c.encoder_ffn_dim = sizes[6];
  c.decoder_ffn_dim = sizes[7];
  c.max_position_embeddings = sizes[8];
  std::array<int64_t*, kTokenIds.size()> ids{&c.pad_token_id, &c.bos_token_id, &c.eos_token_id,
                                             &c.decoder_start_token_id};
  for (size_t i = 0; i < kTokenIds.size(); ++i) {
    if (j.contains(kTokenIds[i])) *ids[i] = jf::integer(j[kTokenIds[i]], kTokenIds[i], source, 0, jf::kMaxSize);
  }
  // One probability for the sublayers' outputs and the attention weights, as the model has.
  if (j.contains("dropout")) c.dropout = jf::number(j["dropout"], "dropout", source);
  if (j.contains("attention_dropout") &&
      jf::number(j["attention_dropout"], "attention_dropout", source) != c.dropout) {
    jf::fail(source, "attention_dropout differs from dropout; tinygpt uses one probability for both");
  }
  for (const char* key : {"activation_dropout", "classifier_dropout"}) {
    if (j.contains(key) && !j[key].is_null() && jf::number(j[key], key, source) != 0.0) {
      jf::fail(source, "{} is {}, but tinygpt's encoder-decoder has none (0)", key, jf::shown(j[key]));
    }
  }
  if (j.contains("layer_norm_eps")) c.layer_norm_epsilon = jf::number(j["layer_norm_eps"], "layer_norm_eps", source);
  if (j.contains(kCrossAttentionKey)) {
    if (!j[kCrossAttentionKey].is_boolean()) jf::fail(source, "{} must be true or false", kCrossAttentionKey);
    c.cross_attention = j[kCrossAttentionKey].get<bool>();
  }
  if (j.contains(kCrossScoreKey) && !j[kCrossScoreKey].is_string()) {
    jf::fail(source, "{} must be a string", kCrossScoreKey);
  }
  if (j.contains(kEncoderAttentionKey)) {
    c.encoder_attention = bigbird_json::read_encoder_object(j[kEncoderAttentionKey], c.max_position_embeddings, source);
  }
  try {
    if (j.contains(kCrossScoreKey)) c.cross_score = nn::parse_attention_score(j[kCrossScoreKey].get<std::string>());
    c.validate();
  } catch (const Error& e) {
    throw io::FormatError(source + ": ", e);
  }
  return c;
}

}  // namespace tinygpt::train
