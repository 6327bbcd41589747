// config.json and model.safetensors of Hugging Face's BertForMaskedLM <-> nn::BertForMaskedLM.
#include "tinygpt/train/bert_files.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <string_view>

#include "bigbird_json.hpp"
#include "json_fields.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"

namespace tinygpt::train {
namespace {

using nlohmann::json;
namespace jf = json_fields;

// Keys that do not change what the masked LM computes.
constexpr std::array<std::string_view, 15> kBertIgnoredKeys = {
    "architectures", "torch_dtype", "transformers_version", "_name_or_path", "use_cache",
    "gradient_checkpointing", "classifier_dropout", "bos_token_id", "eos_token_id",
    "sep_token_id", "id2label", "label2id", "output_past", "chunk_size_feed_forward",
    "initializer_range"};
constexpr std::array<std::string_view, 15> kBertHonouredKeys = {
    "model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "max_position_embeddings", "type_vocab_size", "layer_norm_eps",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "pad_token_id",
    "position_embedding_type", "is_decoder"};
// tinygpt's own keys, written for a model BERT cannot express (the BigBird attention's as an
// encoder-decoder's encoder writes them, bigbird_json.hpp).
constexpr std::array<std::string_view, 3> kTinyGptKeys = {"rope_theta", "pre_layer_norm",
                                                          bigbird_json::kEncoderKey};

bool expressible_as_bert(const nn::BertConfig& c) {
  return c.position == nn::PositionEmbedding::learned && !c.pre_layer_norm && c.attention.is_full();
}

// Hugging Face's spelling of position_embedding_type: "absolute" is learned.
std::string position_name(nn::PositionEmbedding p) {
  return p == nn::PositionEmbedding::learned ? "absolute" : nn::position_embedding_name(p);
}

// tinygpt's names inside the attention (nn/bert.hpp) and BERT's.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kAttentionNames = {{
    {".attention.self.q_proj.", ".attention.self.query."},
    {".attention.self.k_proj.", ".attention.self.key."},
    {".attention.self.v_proj.", ".attention.self.value."},
    {".attention.self.out_proj.", ".attention.output.dense."},
}};

std::string renamed(std::string name, bool to_bert) {
  for (const auto& [ours, theirs] : kAttentionNames) {
    const std::string_view from = to_bert ? ours : theirs, to = to_bert ? theirs : ours;
    const size_t at = name.find(from);
    if (at != std::string::npos) return name.replace(at, from.size(), to);
  }
  return name;
}

// A name of the file as the model names it: the "bert." prefix added where a base model's file
// lacks it, LayerNorm's old gamma/beta spelled weight/bias, BERT's attention names tinygpt's.
std::string model_name(std::string name) {
  if (name.rfind("bert.", 0) != 0 && name.rfind("cls.", 0) != 0) name = "bert." + name;
  const auto ends_with = [&name](std::string_view tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends_with("LayerNorm.gamma")) name.replace(name.size() - 5, 5, "weight");
  if (ends_with("LayerNorm.beta")) name.replace(name.size() - 4, 4, "bias");
  return renamed(std::move(name), false);
}

// Tensors a BertForMaskedLM file may hold that the masked LM's output does not read.
bool unused_by_mlm(const std::string& name) {
  return name == "bert.embeddings.position_ids" || name.rfind("bert.pooler.", 0) == 0 ||
         name.rfind("cls.seq_relationship.", 0) == 0 || name == "cls.predictions.decoder.weight" ||
         name == "cls.predictions.decoder.bias";
}

}  // namespace

std::string bert_config_to_json(const nn::BertConfig& c) {
  const bool bert = expressible_as_bert(c);
  json j = {{"architectures", {bert ? "BertForMaskedLM" : "TinyGPTEncoderForMaskedLM"}},
            {"model_type", bert ? kBertModelType : kTinyGptEncoderModelType},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.hidden_size},
            {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads},
            {"intermediate_size", c.intermediate_size},
            {"max_position_embeddings", c.max_position_embeddings},
            {"type_vocab_size", c.type_vocab_size},
            {"layer_norm_eps", c.layer_norm_eps},
            {"hidden_act", "gelu"},
            {"hidden_dropout_prob", c.hidden_dropout_prob},
            {"attention_probs_dropout_prob", c.attention_probs_dropout_prob},
            {"initializer_range", c.initializer_range},
            {"pad_token_id", c.pad_token_id},
            {"position_embedding_type", position_name(c.position)},
            {"torch_dtype", "float32"}};
  if (!bert) {
    j["pre_layer_norm"] = c.pre_layer_norm;
    j["rope_theta"] = c.rope_theta;
  }
  if (!c.attention.is_full()) j[bigbird_json::kEncoderKey] = bigbird_json::encoder_object(c.attention_pattern());
  return j.dump(2) + "\n";
}

nn::BertConfig bert_config_from_json(const std::string& text, const std::string& source) {
  const json j = jf::parse(text, source);
  if (!j.is_object()) jf::fail(source, "expected a JSON object, got {}", jf::shown(j));
  const std::string type = jf::string(jf::required(j, "model_type", source), "model_type", source);
  if (type != kBertModelType && type != kTinyGptEncoderModelType) {
    jf::fail(source, "model_type \"{}\" is not a BERT masked LM (\"{}\" or \"{}\")", excerpt(type),
             kBertModelType, kTinyGptEncoderModelType);
  }
  const bool own = type == kTinyGptEncoderModelType;
  for (const auto& item : j.items()) {
    const bool known = jf::one_of(kBertIgnoredKeys, item.key()) || jf::one_of(kBertHonouredKeys, item.key()) ||
                       (own && jf::one_of(kTinyGptKeys, item.key()));
    if (!known) jf::fail(source, "key '{}' is not supported for a {} model", excerpt(item.key()), type);
  }
  const auto size = [&](const char* key, int64_t fallback) {
    return j.contains(key) ? jf::integer(j[key], key, source, 1, jf::kMaxSize) : fallback;
  };
  const auto number = [&](const char* key, double fallback) {
    return j.contains(key) ? jf::number(j[key], key, source) : fallback;
  };
  nn::BertConfig c;
  c.vocab_size = jf::integer(jf::required(j, "vocab_size", source), "vocab_size", source, 1, jf::kMaxSize);
  c.hidden_size = size("hidden_size", 768);
  c.num_hidden_layers = size("num_hidden_layers", 12);
  c.num_attention_heads = size("num_attention_heads", 12);
  c.intermediate_size = size("intermediate_size", 3072);
  c.max_position_embeddings = size("max_position_embeddings", 512);
  c.type_vocab_size = size("type_vocab_size", 2);
  c.layer_norm_eps = number("layer_norm_eps", 1e-12);
  c.hidden_dropout_prob = number("hidden_dropout_prob", 0.1);
  c.attention_probs_dropout_prob = number("attention_probs_dropout_prob", 0.1);
  c.initializer_range = number("initializer_range", 0.02);
  c.rope_theta = number("rope_theta", 10000.0);
  c.pad_token_id = j.contains("pad_token_id") ? jf::integer(j["pad_token_id"], "pad_token_id", source, 0, jf::kMaxSize) : 0;
  if (j.contains("pre_layer_norm")) c.pre_layer_norm = jf::boolean(j["pre_layer_norm"], "pre_layer_norm", source);
  if (j.contains(bigbird_json::kEncoderKey)) {
    c.attention = bigbird_json::read_encoder_object(j[bigbird_json::kEncoderKey],
                                                    c.max_position_embeddings, source);
  }
  const std::string act = j.contains("hidden_act") ? jf::string(j["hidden_act"], "hidden_act", source) : "gelu";
  if (act != "gelu") {
    jf::fail(source, "hidden_act \"{}\" is not supported: tinygpt's encoder computes \"gelu\" (exact erf)", excerpt(act));
  }
  if (j.contains("is_decoder") && jf::boolean(j["is_decoder"], "is_decoder", source)) {
    jf::fail(source, "is_decoder is true: tinygpt's encoder attends both ways");
  }
  const std::string position = j.contains("position_embedding_type")
      ? jf::string(j["position_embedding_type"], "position_embedding_type", source) : "absolute";
  if (position == "absolute") {
    c.position = nn::PositionEmbedding::learned;
  } else if (own && position != "learned") {
    try {
      c.position = nn::parse_position_embedding(position);
    } catch (const ValueError& e) {
      jf::fail(source, "position_embedding_type: {}", e.what());
    }
  } else {
    jf::fail(source, "position_embedding_type \"{}\" is not supported: tinygpt's BERT has \"absolute\"",
             excerpt(position));
  }
  return c;
}

io::NamedTensors to_hugging_face_bert(const nn::BertForMaskedLM& model) {
  io::NamedTensors out;
  for (const auto& [name, tensor] : model.state_dict()) out.emplace_back(renamed(name, true), tensor);
  return out;
}

void load_hugging_face_bert(nn::BertForMaskedLM& model, const io::SafetensorsFile& file,
                            std::vector<std::string>& notes) {
  std::map<std::string, Tensor> given;
  for (const auto& [name, tensor] : file.tensors) {
    const std::string ours = model_name(name);
    if (unused_by_mlm(ours)) continue;
    if (!given.emplace(ours, tensor).second) {
      throw ValueError(Operation("load_hugging_face_bert"),
                       fmt::format("{}: {} names a tensor given twice (with and without the bert. prefix?)",
                                   file.source, excerpt(name)));
    }
  }
  // A base model's file: the head keeps its initial weights, as Hugging Face does with a warning.
  const bool has_head = std::any_of(given.begin(), given.end(),
                                    [](const auto& item) { return item.first.rfind("cls.", 0) == 0; });
  if (!has_head) notes.push_back(file.source + ": no cls.predictions tensors (a BertModel's file): the MLM head is newly initialised");
  nn::NamedTensors state;
  for (const auto& [name, tensor] : model.state_dict()) {
    const auto it = given.find(name);
    if (it != given.end()) {
      state.emplace_back(name, it->second);
      given.erase(it);
    } else if (!has_head && name.rfind("cls.", 0) == 0) {
      state.emplace_back(name, tensor);
    } else {
      throw ValueError(Operation("load_hugging_face_bert"),
                       fmt::format("{}: tensor {} is missing", file.source, renamed(name, true)));
    }
  }
  if (!given.empty()) {
    throw ValueError(Operation("load_hugging_face_bert"),
                     fmt::format("{}: tensor {} is not part of this BertForMaskedLM", file.source,
                                 excerpt(renamed(given.begin()->first, true))));
  }
  model.load_state_dict(state);
}

void save_bert(const std::string& dir, const nn::BertForMaskedLM& model,
               const data::MaskedLMTokenizer& tokenizer) {
  io::commit_files(dir, {{"config.json", bert_config_to_json(model.config())},
                         {"model.safetensors", io::encode_safetensors(to_hugging_face_bert(model),
                                                                      {{"format", "pt"}})},
                         {"tokenizer.json", tokenizer.to_json() + "\n"}});
}

LoadedBert load_bert(const std::string& dir) {
  const std::filesystem::path root(dir);
  LoadedBert out;
  const std::string config_path = (root / "config.json").string();
  out.config = bert_config_from_json(io::read_file(config_path), config_path);
  out.model = std::make_unique<nn::BertForMaskedLM>(out.config, 0);
  load_hugging_face_bert(*out.model, io::load_safetensors((root / "model.safetensors").string()), out.notes);
  const std::filesystem::path tokenizer_path = root / "tokenizer.json";
  if (!std::filesystem::exists(tokenizer_path)) {
    out.notes.push_back(dir + " has no tokenizer.json (a WordPiece vocab.txt is not read): give token ids");
    return out;
  }
  try {
    out.tokenizer = data::MaskedLMTokenizer::from_json(io::read_file(tokenizer_path.string()));
  } catch (const ValueError& e) {
    out.notes.push_back(fmt::format("{} is not a tokenizer tinygpt reads ({})", tokenizer_path.string(), e.what()));
    return out;
  }
  if (out.tokenizer->vocab_size() != out.config.vocab_size) {
    throw io::FormatError(fmt::format("{}: {} tokens, but config.json's vocab_size is {}",
                                      tokenizer_path.string(), out.tokenizer->vocab_size(),
                                      out.config.vocab_size));
  }
  return out;
}

std::vector<MaskFill> fill_masks(nn::BertForMaskedLM& model, const std::vector<int64_t>& ids,
                                 int64_t top_k) {
  if (top_k <= 0) throw SettingError(Operation("fill_masks"), "top_k", top_k, fmt::format("top_k must be positive, got {}", top_k));
  NoGradGuard no_grad;
  model.eval();
  const std::vector<int64_t> framed = data::MaskedLMTokenizer::frame(ids);
  const auto t = static_cast<int64_t>(framed.size());
  const Tensor probs = softmax(model.forward(Tensor::from_ids(framed, {1, t})), -1).to(DType::f64);
  const int64_t v = probs.size(2);
  std::vector<MaskFill> out;
  for (int64_t i = 0; i < static_cast<int64_t>(ids.size()); ++i) {
    if (ids[static_cast<size_t>(i)] != data::MaskedLMTokenizer::kMask) continue;
    const double* row = probs.data<double>() + (i + 1) * v;  // + 1: [CLS]
    std::vector<int64_t> order(static_cast<size_t>(v));
    std::iota(order.begin(), order.end(), 0);
    const auto k = static_cast<size_t>(std::min(top_k, v));
    std::partial_sort(order.begin(), order.begin() + static_cast<long>(k), order.end(),
                      [row](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    MaskFill fill;
    fill.position = i;
    for (size_t r = 0; r < k; ++r) fill.top.emplace_back(order[r], row[order[r]]);
    out.push_back(std::move(fill));
  }
  return out;
}

}  // namespace tinygpt::train
