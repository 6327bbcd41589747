#include "tinygpt/nn/bert.hpp"

#include "tinygpt/autograd/ops.hpp"
#include "setting_checks.hpp"

namespace tinygpt::nn {

void BertConfig::validate() const {
  const Operation op("BertConfig");
  for (const auto& [name, v] : {std::pair{"vocab_size", vocab_size}, std::pair{"hidden_size", hidden_size},
                                std::pair{"num_hidden_layers", num_hidden_layers},
                                std::pair{"num_attention_heads", num_attention_heads},
                                std::pair{"intermediate_size", intermediate_size},
                                std::pair{"max_position_embeddings", max_position_embeddings},
                                std::pair{"type_vocab_size", type_vocab_size}}) {
    require_positive(op, name, v);
  }
  if (hidden_size % num_attention_heads != 0) {
    throw SettingError(op, {named("hidden_size", hidden_size), " is not divisible by ",
                            named("num_attention_heads", num_attention_heads)});
  }
  if (position == PositionEmbedding::rope && (hidden_size / num_attention_heads) % 2 != 0) {
    throw SettingError(op, {named("hidden_size", hidden_size), " over ",
                            named("num_attention_heads", num_attention_heads),
                            " gives an odd head width, which RoPE cannot pair"});
  }
  require_dropout(op, "hidden_dropout_prob", hidden_dropout_prob);
  require_dropout(op, "attention_probs_dropout_prob", attention_probs_dropout_prob);
  require_positive(op, "layer_norm_eps", layer_norm_eps);
  require_positive(op, "initializer_range", initializer_range);
  require_positive(op, "rope_theta", rope_theta);
  if (pad_token_id < 0 || pad_token_id >= vocab_size) {
    throw SettingError(op, {named("pad_token_id", pad_token_id),
                            fmt::format(" is outside the vocabulary [0, {})", vocab_size)});
  }
  attention_pattern();
}

AttentionPattern BertConfig::attention_pattern() const {
  return encoder_self_attention(Operation("BertConfig"), "attention", attention,
                                max_position_embeddings);
}

DenseNorm::DenseNorm(int64_t in, int64_t out, bool with_dense, bool with_norm, double eps,
                     Generator& init) {
  if (with_dense) {
    dense = register_module("dense", std::make_shared<Linear>(in, out, true, init, WeightLayout::out_in));
  }
  if (with_norm) norm = register_module("LayerNorm", std::make_shared<LayerNorm>(out, eps));
}

BertAttention::BertAttention(const BertConfig& config, Generator& init,
                             std::shared_ptr<Generator> noise) {
  MultiHeadAttentionOptions options;
  options.d_model = config.hidden_size;
  options.n_heads = config.num_attention_heads;
  options.dropout = config.attention_probs_dropout_prob;
  options.position = config.position;
  options.rope_theta = config.rope_theta;
  options.pattern = config.attention_pattern();
  self = register_module("self", std::make_shared<MultiHeadAttention>(options, init, std::move(noise)));
  const int64_t c = config.hidden_size;
  output = register_module("output", std::make_shared<DenseNorm>(c, c, false, true, config.layer_norm_eps, init));
}

BertLayer::BertLayer(const BertConfig& config, Generator& init, std::shared_ptr<Generator> noise)
    : pre_layer_norm_(config.pre_layer_norm) {
  const int64_t c = config.hidden_size, f = config.intermediate_size;
  const double eps = config.layer_norm_eps;
  attention = register_module("attention", std::make_shared<BertAttention>(config, init, noise));
  intermediate = register_module("intermediate", std::make_shared<DenseNorm>(c, f, true, false, eps, init));
  output = register_module("output", std::make_shared<DenseNorm>(f, c, true, true, eps, init));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(config.hidden_dropout_prob, std::move(noise)));
}

Tensor BertLayer::forward(const Tensor& x, const std::vector<int64_t>& lengths) {
  const LayerNorm& attention_norm = *attention->output->norm;
  const LayerNorm& ffn_norm = *output->norm;
  const auto attend = [&](const Tensor& in) {
    return dropout_->forward(attention->self->forward(in, in, {false, lengths}));
  };
  const auto feed_forward = [&](const Tensor& in) {
    return dropout_->forward(output->dense->forward(gelu_erf(intermediate->dense->forward(in))));
  };
  if (pre_layer_norm_) {
    const Tensor h = x + attend(attention_norm.forward(x));
    return h + feed_forward(ffn_norm.forward(h));
  }
  const Tensor h = attention_norm.forward(x + attend(x));
  return ffn_norm.forward(h + feed_forward(h));
}

BertEmbeddings::BertEmbeddings(const BertConfig& config, Generator& init,
                               std::shared_ptr<Generator> noise)
    : position_(config.position) {
  const int64_t c = config.hidden_size;
  word_embeddings = register_module("word_embeddings", std::make_shared<Embedding>(config.vocab_size, c, init));
  if (config.position == PositionEmbedding::learned) {
    position_embeddings = register_module(
        "position_embeddings", std::make_shared<Embedding>(config.max_position_embeddings, c, init));
  }
  token_type_embeddings = register_module(
      "token_type_embeddings", std::make_shared<Embedding>(config.type_vocab_size, c, init));
  norm = register_module("LayerNorm", std::make_shared<LayerNorm>(c, config.layer_norm_eps));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(config.hidden_dropout_prob, std::move(noise)));
}

Tensor BertEmbeddings::forward(const Tensor& tokens) const {
  if (tokens.ndim() != 2 || tokens.dtype() != DType::i64) {
    throw ShapeError(Operation("BertForMaskedLM"), fmt::format("expects tokens (B,T) of i64, got {} {}",
                                 tokens.shape().str(), dtype_name(tokens.dtype())));
  }
  const int64_t b = tokens.size(0), t = tokens.size(1);
  Tensor x = word_embeddings->forward(tokens);
  if (position_embeddings) {
    const int64_t limit = position_embeddings->weight.size(0);
    if (t > limit) {
      throw IndexError(Operation("BertForMaskedLM"),
                       fmt::format("sequence length {} exceeds max_position_embeddings {}", t, limit));
    }
    std::vector<int64_t> positions(static_cast<size_t>(t));
    for (int64_t i = 0; i < t; ++i) positions[static_cast<size_t>(i)] = i;
    x = x + position_embeddings->forward(Tensor::from_ids(positions, {t}));
  } else if (position_ == PositionEmbedding::sinusoidal) {
    x = x + sinusoidal_positions(0, t, x.size(2), x.dtype());
  }
  // Every input is one segment: token type 0.
  const std::vector<int64_t> type_zero(static_cast<size_t>(b * t), 0);
  x = x + token_type_embeddings->forward(Tensor::from_ids(type_zero, {b, t}));
  return dropout_->forward(norm->forward(x));
}

BertStack::BertStack(const BertConfig& config, Generator& init, std::shared_ptr<Generator> noise) {
  layer = register_module("layer", std::make_shared<ModuleList<BertLayer>>());
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    layer->push_back(std::make_shared<BertLayer>(config, init, noise));
  }
  if (config.pre_layer_norm) {
    norm = register_module("LayerNorm", std::make_shared<LayerNorm>(config.hidden_size, config.layer_norm_eps));
  }
}

BertBody::BertBody(const BertConfig& config, Generator& init, std::shared_ptr<Generator> noise) {
  embeddings = register_module("embeddings", std::make_shared<BertEmbeddings>(config, init, noise));
  encoder = register_module("encoder", std::make_shared<BertStack>(config, init, std::move(noise)));
}

BertPredictions::BertPredictions(const BertConfig& config, Generator& init) {
  const int64_t c = config.hidden_size;
  transform = register_module("transform", std::make_shared<DenseNorm>(c, c, true, true, config.layer_norm_eps, init));
  bias = register_parameter("bias", Tensor::zeros({config.vocab_size}));
}

BertHeads::BertHeads(const BertConfig& config, Generator& init) {
  predictions = register_module("predictions", std::make_shared<BertPredictions>(config, init));
}

BertForMaskedLM::BertForMaskedLM(const BertConfig& config, uint64_t seed)
    : config_(config), noise_(std::make_shared<Generator>(seed ^ 0x5eedbe27u)) {
  config.validate();
  Generator init(seed);
  bert = register_module("bert", std::make_shared<BertBody>(config, init, noise_));
  cls = register_module("cls", std::make_shared<BertHeads>(config, init));
  // As BERT's _init_weights: matrices N(0, initializer_range); LayerNorm gains 1; biases 0.
  for (auto& [name, p] : named_parameters()) {
    const bool norm_gain = name.find("LayerNorm.weight") != std::string::npos;
    if (p.ndim() == 2) {
      p.copy_(Tensor::randn(p.shape(), init, p.dtype(), 0.0, config.initializer_range));
    } else {
      p.fill_(norm_gain ? 1.0 : 0.0);
    }
  }
}

Tensor BertForMaskedLM::encode(const Tensor& tokens, const std::vector<int64_t>& lengths) {
  if (!lengths.empty() && static_cast<int64_t>(lengths.size()) != tokens.size(0)) {
    throw ShapeError(Operation("BertForMaskedLM"),
                     fmt::format("{} lengths for a batch of {}", lengths.size(), tokens.size(0)));
  }
  Tensor x = bert->embeddings->forward(tokens);  // (B,T,C)
  for (auto& layer : *bert->encoder->layer) x = layer->forward(x, lengths);
  return bert->encoder->norm ? bert->encoder->norm->forward(x) : x;
}

Tensor BertForMaskedLM::forward(const Tensor& tokens, const std::vector<int64_t>& lengths) {
  const DenseNorm& transform = *cls->predictions->transform;
  const Tensor h = transform.norm->forward(gelu_erf(transform.dense->forward(encode(tokens, lengths))));
  // The decoder is the word embedding (V,C), read transposed.
  return matmul(h, bert->embeddings->word_embeddings->weight, false, true) + cls->predictions->bias;
}

Tensor BertForMaskedLM::loss(const Tensor& tokens, const std::vector<int64_t>& lengths,
                             const Tensor& labels) {
  if (labels.shape() != tokens.shape()) {
    throw ShapeError(Operation("BertForMaskedLM::loss"), fmt::format("labels {} and tokens {} differ",
                                 labels.shape().str(), tokens.shape().str()));
  }
  return cross_entropy(forward(tokens, lengths), labels, kIgnoreIndex);
}

void BertForMaskedLM::set_keep_attention_weights(bool keep) {
  for (auto& layer : *bert->encoder->layer) layer->attention->self->set_keep_attention_weights(keep);
}

std::vector<Tensor> BertForMaskedLM::attention_weights() const {
  std::vector<Tensor> out;
  for (auto& layer : *bert->encoder->layer) out.push_back(layer->attention->self->attention_weights());
  return out;
}

}  // namespace tinygpt::nn
