// config.json <-> GPTConfig, in Hugging Face GPT-2's keys. Every key a GPT-2 config can hold is
// either honoured (read into GPTConfig, or checked to have the one value tinygpt's model
// computes), ignored by name (metadata that does not change what the model computes), or
// refused by name; an unknown key is refused too, so no setting is ever silently dropped.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <string_view>

#include "bigbird_json.hpp"
#include "json_fields.hpp"
#include "tinygpt/train/checkpoint.hpp"

namespace tinygpt::train {
namespace {

using nlohmann::json;
namespace jf = json_fields;

// Keys that do not change the causal LM's output: initialisation, the heads of other GPT-2
// models (summary_* is GPT2DoubleHeadsModel's), token ids, generation defaults, provenance.
constexpr std::array<std::string_view, 53> kGpt2IgnoredKeys = {
    "initializer_range", "summary_type", "summary_use_proj", "summary_activation",
    "summary_proj_to_labels", "summary_first_dropout", "use_cache", "bos_token_id",
    "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id", "architectures",
    "torch_dtype", "dtype", "use_bfloat16", "transformers_version", "_name_or_path",
    "task_specific_params", "id2label", "label2id", "num_labels", "problem_type",
    "finetuning_task", "tokenizer_class", "prefix", "output_hidden_states", "output_attentions",
    "return_dict", "torchscript", "gradient_checkpointing", "is_decoder",
    "chunk_size_feed_forward", "tie_encoder_decoder", "tf_legacy_loss", "max_length",
    "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "temperature",
    "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty",
    "no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "tinygpt_training_precision"};

// The keys read below; anything else not in kGpt2IgnoredKeys is refused.
constexpr std::array<std::string_view, 34> kGpt2HonouredKeys = {
    "vocab_size", "n_positions", "n_ctx", "n_embd", "n_layer", "n_head", "n_inner",
    "activation_function", "resid_pdrop", "embd_pdrop", "attn_pdrop", "layer_norm_epsilon",
    "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
    "tie_word_embeddings", "bias", "model_type", "add_cross_attention", "pruned_heads",
    "is_encoder_decoder", "position_embedding_type", "rope_theta", "num_key_value_heads",
    "attention_type", "sliding_window", "global_tokens", "sparse_stride", "bigbird_block_size",
    "bigbird_random_blocks", "bigbird_seed", "bigbird_random_key_blocks", "performer_features",
    "performer_redraw_every"};

// GPT-2's tanh approximation of GELU under its Hugging Face names (gelu_fast is the same
// formula factored differently); "gelu" there is the exact erf form, which tinygpt does not compute.
constexpr std::array<std::string_view, 3> kTanhGelu = {"gelu_new", "gelu_pytorch_tanh", "gelu_fast"};

// Performer's keys: performer_features (M >= 1) and performer_redraw_every (>= 0, absent 0);
// no other pattern's keys.
AttentionPattern performer_from_json(const json& j, const std::string& source) {
  for (const char* other : {"sliding_window", "global_tokens", "sparse_stride"}) {
    if (j.contains(other) && !j[other].is_null()) {
      jf::fail(source, "attention_type is \"performer\" but {} is set", other);
    }
  }
  if (!j.contains("performer_features")) {
    jf::fail(source, "attention_type is \"performer\" but performer_features is not set");
  }
  const int64_t every = j.contains("performer_redraw_every")
      ? jf::integer(j["performer_redraw_every"], "performer_redraw_every", source, 0, jf::kMaxSize)
      : 0;
  return AttentionPattern::performer_attention(
      jf::integer(j["performer_features"], "performer_features", source, 1, jf::kMaxSize), every);
}

// attention_type absent is full attention, or a window when sliding_window holds a number (as
// in Hugging Face Mistral's config, where null means none).
AttentionPattern attention_from_json(const json& j, const std::string& source) {
  const bool has_window = j.contains("sliding_window") && !j["sliding_window"].is_null();
  std::string type = has_window ? "sliding_window" : "full";
  if (j.contains("attention_type")) type = jf::string(j["attention_type"], "attention_type", source);
  if (type == "performer") return performer_from_json(j, source);
  if (type != "full" && type != "sliding_window" && type != "strided" && type != "linear" &&
      type != "bigbird") {
    jf::fail(source, "attention_type \"{}\" is not supported: this tinygpt has \"full\", "
             "\"sliding_window\", \"strided\", \"linear\", \"bigbird\" and \"performer\"", excerpt(type));
  }
  const bool has_stride = j.contains("sparse_stride") && !j["sparse_stride"].is_null();
  const bool has_globals = j.contains("global_tokens") && !j["global_tokens"].is_null();
  const bool windowed = type == "sliding_window" || type == "bigbird";
  if (!windowed && (has_window || has_globals)) {
    jf::fail(source, "attention_type is \"{}\" but sliding_window or global_tokens is set",
             excerpt(type));
  }
  if (type != "strided" && has_stride) {
    jf::fail(source, "attention_type is \"{}\" but sparse_stride is set", excerpt(type));
  }
  for (const char* key : {"bigbird_block_size", "bigbird_random_blocks", "bigbird_seed",
                          "bigbird_random_key_blocks"}) {
    if (type != "bigbird" && j.contains(key)) {
      jf::fail(source, "attention_type is \"{}\" but {} is set", excerpt(type), key);
    }
  }
  if (type == "full") return {};
  if (type == "linear") return AttentionPattern::linear_attention();
  if (type == "bigbird") return bigbird_json::read(j, source);
  if (type == "strided") {
    if (!has_stride) jf::fail(source, "attention_type is \"strided\" but sparse_stride is not set");
    AttentionPattern p;
    p.kind = AttentionPattern::Kind::strided;
    p.stride = jf::integer(j["sparse_stride"], "sparse_stride", source, 1, jf::kMaxSize);
    return p;
  }
  if (!has_window) jf::fail(source, "attention_type is \"sliding_window\" but sliding_window is not set");
  AttentionPattern p;
  p.kind = AttentionPattern::Kind::window;
  p.window = jf::integer(j["sliding_window"], "sliding_window", source, 1, jf::kMaxSize);
  p.global_tokens =
      has_globals ? jf::integer(j["global_tokens"], "global_tokens", source, 0, jf::kMaxSize) : 0;
  return p;
}

// A pattern reaching past the context (Hugging Face configs may give a sliding_window beyond
// n_positions, older tinygpt runs took any --window) sees every key inside it, as one reaching to
// its end does: capped there, it attends the same and sizes the generation cache by the model.
AttentionPattern within_context(AttentionPattern p, int64_t block_size) {
  p.window = std::min(p.window, block_size);
  p.global_tokens = std::min(p.global_tokens, block_size);
  p.stride = std::min(p.stride, block_size);
  return p;
}

// GPT-2's config.pruned_heads: {"layer": [head, ...]} with the layer as a string key.
std::map<int64_t, std::vector<int64_t>> pruned_heads_from_json(const json& value, const std::string& source) {
  if (!value.is_object()) jf::fail(source, "key 'pruned_heads' must be an object, got {}", jf::shown(value));
  std::map<int64_t, std::vector<int64_t>> pruned;
  for (const auto& [key, heads] : value.items()) {
    char* end = nullptr;
    const long long layer = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || !heads.is_array()) {
      jf::fail(source, "pruned_heads: '{}': {} is not a layer number and a list of heads", key, jf::shown(heads));
    }
    std::vector<int64_t>& list = pruned[static_cast<int64_t>(layer)];
    for (const json& h : heads) list.push_back(jf::integer(h, "pruned_heads", source, 0, jf::kMaxSize));
    if (list.empty()) pruned.erase(static_cast<int64_t>(layer));
  }
  return pruned;
}

}  // namespace

std::string config_to_json(const nn::GPTConfig& c, const std::string& training_precision) {
  return nn::gpt_config_json(c, training_precision);
}

nn::GPTConfig config_from_json(const std::string& text, const std::string& source) {
  const json j = jf::parse(text, source);
  // A key that must hold the one value tinygpt's GPT computes; absent means GPT-2's default.
  const auto require_value = [&](const char* key, const json& expected, const char* why) {
    const auto it = j.find(key);
    if (it != j.end() && *it != expected) {
      jf::fail(source, "{} is {}, but tinygpt's GPT supports only {} ({})", key, jf::shown(*it),
               expected.dump(), why);
    }
  };
  const auto size = [&](const char* key) {
    return jf::integer(jf::required(j, key, source), key, source, 1, jf::kMaxSize);
  };

  nn::GPTConfig c;
  c.vocab_size = size("vocab_size");
  c.block_size = size("n_positions");
  c.n_embd = size("n_embd");
  c.n_layer = size("n_layer");
  c.n_head = size("n_head");
  // After the required keys, so a renamed one is reported as missing.
  for (const auto& item : j.items()) {
    if (!jf::one_of(kGpt2HonouredKeys, item.key()) && !jf::one_of(kGpt2IgnoredKeys, item.key())) {
      jf::fail(source, "unknown key '{}': tinygpt cannot tell whether it changes the model", excerpt(item.key()));
    }
  }
  if (j.contains("n_ctx") && jf::integer(j["n_ctx"], "n_ctx", source) != c.block_size) {
    jf::fail(source, "n_ctx {} differs from n_positions {}", j["n_ctx"].dump(), c.block_size);
  }
  if (j.contains("n_inner") && !j["n_inner"].is_null() &&
      jf::integer(j["n_inner"], "n_inner", source) != 4 * c.n_embd) {
    jf::fail(source, "n_inner is {}, but tinygpt's MLP is 4 * n_embd = {} wide (or null)",
             j["n_inner"].dump(), 4 * c.n_embd);
  }
  if (j.contains("activation_function")) {
    const std::string act = jf::string(j["activation_function"], "activation_function", source);
    if (!jf::one_of(kTanhGelu, act)) {
      jf::fail(source, "activation_function '{}' is not supported: tinygpt computes GPT-2's tanh "
               "GELU (gelu_new, gelu_pytorch_tanh or gelu_fast)", act);
    }
  }
  // One dropout probability for the embeddings, the attention and the residuals.
  double dropout = -1.0;
  for (const char* key : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) {
    if (!j.contains(key)) continue;
    const double p = jf::number(j[key], key, source);
    if (dropout >= 0.0 && p != dropout) {
      jf::fail(source, "resid_pdrop, embd_pdrop and attn_pdrop differ; tinygpt uses one dropout "
               "probability for all three");
    }
    dropout = p;
  }
  c.dropout = dropout >= 0.0 ? dropout : 0.0;
  c.layer_norm_epsilon =
      j.contains("layer_norm_epsilon") ? jf::number(j["layer_norm_epsilon"], "layer_norm_epsilon", source) : 1e-5;
  require_value("scale_attn_by_inverse_layer_idx", false, "no per-layer score scaling");
  require_value("add_cross_attention", false, "a decoder without cross-attention");
  require_value("is_encoder_decoder", false, "a decoder only");
  // Its own type for what GPT-2 cannot hold; checkpoints before it said gpt2 for every variant.
  if (const auto it = j.find("model_type");
      it != j.end() && *it != kGpt2ModelType && *it != kTinyGptModelType) {
    jf::fail(source, "model_type is {}, but tinygpt reads only \"{}\" and \"{}\" (GPT-2's "
             "architecture and its own variants of it)", jf::shown(*it), kGpt2ModelType,
             kTinyGptModelType);
  }
  // Raw dot products are a tinygpt variant (train --no-attention-scale): a GPT-2 config always
  // divides its scores by sqrt(head size).
  if (j.contains("scale_attn_weights")) {
    c.scale_attn_weights = jf::boolean(j["scale_attn_weights"], "scale_attn_weights", source);
  }
  if (!c.scale_attn_weights && j.value("model_type", "") != kTinyGptModelType) {
    require_value("scale_attn_weights", true, "a model_type \"tinygpt\" config may set it false");
  }
  if (j.contains("pruned_heads")) c.pruned_heads = pruned_heads_from_json(j["pruned_heads"], source);
  // Attention runs in float32 whichever order HF would compute it in.
  if (j.contains("reorder_and_upcast_attn")) {
    jf::boolean(j["reorder_and_upcast_attn"], "reorder_and_upcast_attn", source);
  }
  c.tie_weights = j.contains("tie_word_embeddings")
                      ? jf::boolean(j["tie_word_embeddings"], "tie_word_embeddings", source)
                      : true;
  c.bias = j.contains("bias") ? jf::boolean(j["bias"], "bias", source) : true;
  // The attention variants (docs/ATTENTION_VARIANTS.md); a config without them, as GPT-2's and
  // those written before the variants, is learned positions and multi-head attention.
  if (j.contains("position_embedding_type")) {
    const std::string type = jf::string(j["position_embedding_type"], "position_embedding_type", source);
    try {
      c.position_embedding = nn::parse_position_embedding(type);
    } catch (const ValueError& e) {
      throw io::FormatError(source + ": ", Error(Operation("position_embedding_type"), e.what()));
    }
  }
  if (j.contains("rope_theta")) c.rope_theta = jf::number(j["rope_theta"], "rope_theta", source);
  c.n_kv_head = j.contains("num_key_value_heads")
                    ? jf::integer(j["num_key_value_heads"], "num_key_value_heads", source, 1, jf::kMaxSize)
                    : c.n_head;
  c.attention = within_context(attention_from_json(j, source), c.block_size);
  if (c.attention.kind == AttentionPattern::Kind::bigbird) {
    bigbird_json::check(j, c.attention, c.block_size, "n_positions", false, source);
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw io::FormatError(source + ": ", e);
  }
  return c;
}

}  // namespace tinygpt::train
