#include "tinygpt/nn/encoder_decoder.hpp"

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "setting_checks.hpp"

namespace tinygpt::nn {

void EncoderDecoderConfig::validate() const {
  const Operation op("EncoderDecoderConfig");
  const auto positive = [&op](const char* name, int64_t v) { require_positive(op, name, v); };
  positive("vocab_size", vocab_size);
  positive("d_model", d_model);
  positive("encoder_layers", encoder_layers);
  positive("decoder_layers", decoder_layers);
  positive("encoder_attention_heads", encoder_attention_heads);
  positive("decoder_attention_heads", decoder_attention_heads);
  positive("encoder_ffn_dim", encoder_ffn_dim);
  positive("decoder_ffn_dim", decoder_ffn_dim);
  positive("max_position_embeddings", max_position_embeddings);
  for (const auto& [name, heads] : {std::pair{"encoder_attention_heads", encoder_attention_heads},
                                    std::pair{"decoder_attention_heads", decoder_attention_heads}}) {
    if (d_model % heads != 0) {
      throw SettingError(op, {named("d_model", d_model), " is not divisible by ", named(name, heads)});
    }
  }
  require_dropout(op, "dropout", dropout);
  require_positive(op, "layer_norm_epsilon", layer_norm_epsilon);
  if (!cross_attention && cross_score != AttentionScore::dot) {
    throw SettingError(op, {named("cross_score", std::string(attention_score_name(cross_score))),
                            " scores a cross-attention the decoder does not have"});
  }
  encoder_pattern();  // full or BigBird, whose blocks must tile the source's positions
  require_positive(op, "init_std", init_std);
  for (const auto& [name, id] : {std::pair{"pad_token_id", pad_token_id}, std::pair{"bos_token_id", bos_token_id},
                                 std::pair{"eos_token_id", eos_token_id},
                                 std::pair{"decoder_start_token_id", decoder_start_token_id}}) {
    if (id < 0 || id >= vocab_size) {
      throw SettingError(op, {named(name, id), fmt::format(" is outside the vocabulary [0, {})", vocab_size)});
    }
  }
}

AttentionPattern EncoderDecoderConfig::encoder_pattern() const {
  return encoder_self_attention(Operation("EncoderDecoderConfig"), "encoder_attention",
                                encoder_attention, max_position_embeddings);
}

namespace {

std::shared_ptr<MultiHeadAttention> attention(const EncoderDecoderConfig& config, int64_t heads,
                                              Generator& init, std::shared_ptr<Generator> noise,
                                              AttentionScore score = AttentionScore::dot,
                                              const AttentionPattern& pattern = {}) {
  MultiHeadAttentionOptions options{config.d_model, heads, 0, config.dropout, true};
  options.score = score;
  options.pattern = pattern;
  return std::make_shared<MultiHeadAttention>(options, init, std::move(noise));
}

// The mean of memory (B,S,C) over each row's valid positions -> (B,1,C).
Tensor pooled_memory(const Tensor& memory, const std::vector<int64_t>& lengths) {
  const int64_t b = memory.size(0), s = memory.size(1);
  std::vector<double> weights(static_cast<size_t>(b * s), 0.0);
  for (int64_t r = 0; r < b; ++r) {
    const int64_t n = lengths.empty() ? s : lengths[static_cast<size_t>(r)];
    for (int64_t i = 0; i < n; ++i) weights[static_cast<size_t>(r * s + i)] = 1.0 / static_cast<double>(n);
  }
  return matmul(Tensor::from(weights, {b, 1, s}, memory.dtype()), memory);
}

std::shared_ptr<Linear> linear_layer(int64_t in, int64_t out, Generator& init) {
  return std::make_shared<Linear>(in, out, true, init, WeightLayout::out_in);
}

std::shared_ptr<LayerNorm> norm(const EncoderDecoderConfig& config) {
  return std::make_shared<LayerNorm>(config.d_model, config.layer_norm_epsilon);
}

}  // namespace

EncoderLayer::EncoderLayer(const EncoderDecoderConfig& config, Generator& init,
                           std::shared_ptr<Generator> noise) {
  const int64_t c = config.d_model, f = config.encoder_ffn_dim;
  self_attn = register_module("self_attn", attention(config, config.encoder_attention_heads, init, noise,
                                                     AttentionScore::dot, config.encoder_pattern()));
  self_attn_layer_norm = register_module("self_attn_layer_norm", norm(config));
  fc1 = register_module("fc1", linear_layer(c, f, init));
  fc2 = register_module("fc2", linear_layer(f, c, init));
  final_layer_norm = register_module("final_layer_norm", norm(config));
  dropout = register_module("dropout", std::make_shared<Dropout>(config.dropout, std::move(noise)));
}

Tensor EncoderLayer::forward(const Tensor& x, const std::vector<int64_t>& lengths) {
  const Tensor a = self_attn_layer_norm->forward(x);
  Tensor h = x + dropout->forward(self_attn->forward(a, a, {false, lengths}));
  const Tensor m = final_layer_norm->forward(h);
  return h + dropout->forward(fc2->forward_gelu(fc1->forward(m)));
}

DecoderLayer::DecoderLayer(const EncoderDecoderConfig& config, Generator& init,
                           std::shared_ptr<Generator> noise) {
  const int64_t c = config.d_model, f = config.decoder_ffn_dim, heads = config.decoder_attention_heads;
  self_attn = register_module("self_attn", attention(config, heads, init, noise));
  self_attn_layer_norm = register_module("self_attn_layer_norm", norm(config));
  if (config.cross_attention) {
    encoder_attn = register_module("encoder_attn", attention(config, heads, init, noise, config.cross_score));
    encoder_attn_layer_norm = register_module("encoder_attn_layer_norm", norm(config));
  }
  fc1 = register_module("fc1", linear_layer(c, f, init));
  fc2 = register_module("fc2", linear_layer(f, c, init));
  final_layer_norm = register_module("final_layer_norm", norm(config));
  dropout = register_module("dropout", std::make_shared<Dropout>(config.dropout, std::move(noise)));
}

Tensor DecoderLayer::forward(const Tensor& y, const Tensor& memory,
                             const std::vector<int64_t>& memory_lengths, KVCache* self_cache,
                             KVCache* cross_cache) {
  const Tensor a = self_attn_layer_norm->forward(y);
  Tensor h = y + dropout->forward(self_attn->forward(a, a, {true, {}, self_cache}));
  if (encoder_attn) {
    const Tensor q = encoder_attn_layer_norm->forward(h);
    h = h + dropout->forward(encoder_attn->forward(q, memory, {false, memory_lengths, cross_cache}));
  }
  const Tensor m = final_layer_norm->forward(h);
  return h + dropout->forward(fc2->forward_gelu(fc1->forward(m)));
}

template <class Layer>
Stack<Layer>::Stack(const EncoderDecoderConfig& config, int64_t n_layers,
                    std::shared_ptr<Embedding> shared, Generator& init,
                    std::shared_ptr<Generator> noise)
    : shared_(std::move(shared)) {
  embed_positions = register_module(
      "embed_positions", std::make_shared<Embedding>(config.max_position_embeddings, config.d_model, init));
  layers = register_module("layers", std::make_shared<ModuleList<Layer>>());
  for (int64_t i = 0; i < n_layers; ++i) layers->push_back(std::make_shared<Layer>(config, init, noise));
  layer_norm = register_module("layer_norm", norm(config));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(config.dropout, std::move(noise)));
}

template <class Layer>
Tensor Stack<Layer>::embed(const Tensor& tokens, int64_t past) const {
  if (tokens.ndim() != 2 || tokens.dtype() != DType::i64) {
    throw ShapeError(Operation("EncoderDecoder"), fmt::format("expects tokens (B,T) of i64, got {} {}",
                                 tokens.shape().str(), dtype_name(tokens.dtype())));
  }
  const int64_t t = tokens.size(1), limit = embed_positions->weight.size(0);
  if (past + t > limit) {
    throw IndexError(Operation("EncoderDecoder"),
                     fmt::format("sequence length {} exceeds max_position_embeddings {}",
                                 past + t, limit));
  }
  std::vector<int64_t> positions(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) positions[static_cast<size_t>(i)] = past + i;
  return dropout_->forward(shared_->forward(tokens) +
                           embed_positions->forward(Tensor::from_ids(positions, {t})));
}

template class Stack<EncoderLayer>;
template class Stack<DecoderLayer>;

EncoderDecoderBody::EncoderDecoderBody(const EncoderDecoderConfig& config, Generator& init,
                                       std::shared_ptr<Generator> noise) {
  shared = register_module("shared", std::make_shared<Embedding>(config.vocab_size, config.d_model, init));
  encoder = register_module("encoder", std::make_shared<Stack<EncoderLayer>>(
                                           config, config.encoder_layers, shared, init, noise));
  decoder = register_module("decoder", std::make_shared<Stack<DecoderLayer>>(
                                           config, config.decoder_layers, shared, init, noise));
}

EncoderDecoder::EncoderDecoder(const EncoderDecoderConfig& config, uint64_t seed)
    : config_(config), noise_(std::make_shared<Generator>(seed ^ 0x5eedd20u)) {
  config.validate();
  Generator init(seed);
  model = register_module("model", std::make_shared<EncoderDecoderBody>(config, init, noise_));
  for (auto& [name, p] : named_parameters()) {
    const bool norm_gain = name.find("layer_norm") != std::string::npos && p.ndim() == 1 &&
                           name.compare(name.size() - 7, 7, ".weight") == 0;
    if (p.ndim() == 2) {
      p.copy_(Tensor::randn(p.shape(), init, p.dtype(), 0.0, config.init_std));
    } else {
      p.fill_(norm_gain ? 1.0 : 0.0);
    }
  }
}

Tensor EncoderDecoder::encode(const Tensor& source, const std::vector<int64_t>& source_lengths) {
  Tensor x = model->encoder->embed(source, 0);  // (B,S,C)
  if (!source_lengths.empty() && static_cast<int64_t>(source_lengths.size()) != source.size(0)) {
    throw ShapeError(Operation("EncoderDecoder::encode"), fmt::format("{} source lengths for a batch of {}",
                                 source_lengths.size(), source.size(0)));
  }
  for (auto& layer : *model->encoder->layers) x = layer->forward(x, source_lengths);
  return model->encoder->layer_norm->forward(x);
}

Tensor EncoderDecoder::decode(const Tensor& inputs, const Tensor& memory,
                              const std::vector<int64_t>& source_lengths, DecoderCache* cache) {
  const auto n = static_cast<size_t>(config_.decoder_layers);
  if (cache != nullptr && (cache->self.size() != n || cache->cross.size() != n)) {
    throw ValueError(Operation("EncoderDecoder::decode"),
                     fmt::format("the cache has {} layers, the decoder {}",
                                 cache->self.size(), n));
  }
  const int64_t past = cache != nullptr ? cache->self[0].seen : 0;
  Tensor y = model->decoder->embed(inputs, past);  // (B,T,C)
  if (!config_.cross_attention) y = y + pooled_memory(memory, source_lengths);
  for (size_t i = 0; i < n; ++i) {
    y = (*model->decoder->layers)[i].forward(y, memory, source_lengths,
                                             cache != nullptr ? &cache->self[i] : nullptr,
                                             cache != nullptr ? &cache->cross[i] : nullptr);
  }
  y = model->decoder->layer_norm->forward(y);
  return matmul(y, model->shared->weight, false, true);  // (B,T,V): the head is the embedding
}

Tensor EncoderDecoder::forward(const Tensor& source, const std::vector<int64_t>& source_lengths,
                               const Tensor& inputs) {
  return decode(inputs, encode(source, source_lengths), source_lengths);
}

Tensor EncoderDecoder::loss(const Tensor& source, const std::vector<int64_t>& source_lengths,
                            const Tensor& inputs, const Tensor& targets) {
  if (targets.shape() != inputs.shape()) {
    throw ShapeError(Operation("EncoderDecoder::loss"), fmt::format("targets {} and decoder inputs {} differ",
                                 targets.shape().str(), inputs.shape().str()));
  }
  return cross_entropy(forward(source, source_lengths, inputs), targets, kIgnoreIndex);
}

DecoderCache EncoderDecoder::make_cache() const {
  const auto n = static_cast<size_t>(config_.decoder_layers);
  return {std::vector<KVCache>(n), std::vector<KVCache>(n)};
}

void EncoderDecoder::set_keep_attention_weights(bool keep) {
  for (auto& layer : *model->encoder->layers) layer->self_attn->set_keep_attention_weights(keep);
  for (auto& layer : *model->decoder->layers) {
    layer->self_attn->set_keep_attention_weights(keep);
    if (layer->encoder_attn) layer->encoder_attn->set_keep_attention_weights(keep);
  }
}

std::vector<Tensor> EncoderDecoder::encoder_attention_weights() const {
  std::vector<Tensor> out;
  for (auto& layer : *model->encoder->layers) out.push_back(layer->self_attn->attention_weights());
  return out;
}

std::vector<Tensor> EncoderDecoder::decoder_attention_weights() const {
  std::vector<Tensor> out;
  for (auto& layer : *model->decoder->layers) out.push_back(layer->self_attn->attention_weights());
  return out;
}

std::vector<Tensor> EncoderDecoder::cross_attention_weights() const {
  std::vector<Tensor> out;
  for (auto& layer : *model->decoder->layers) {
    if (layer->encoder_attn) out.push_back(layer->encoder_attn->attention_weights());
  }
  return out;
}

std::vector<int64_t> generate(EncoderDecoder& model, const std::vector<int64_t>& source,
                              const SampleOptions& options) {
  const EncoderDecoderConfig& config = model.config();
  const auto s = static_cast<int64_t>(source.size());
  if (s == 0) throw ValueError(Operation("generate"), "the source needs at least one token");
  if (options.tokens < 0) throw ValueError(Operation("generate"), "tokens must be >= 0");
  if (options.temperature < 0.0) throw ValueError(Operation("generate"), "temperature must be >= 0");
  NoGradGuard no_grad;
  model.eval();
  Generator gen(options.seed);
  const Tensor memory = model.encode(Tensor::from_ids(source, {1, s}));  // (1,S,C)
  const int64_t limit = std::min(options.tokens, config.max_position_embeddings - 1);
  DecoderCache cache = model.make_cache();
  std::vector<int64_t> inputs{config.decoder_start_token_id}, out;
  while (static_cast<int64_t>(out.size()) < limit) {
    Tensor logits;  // (1,T,V)
    if (options.use_cache) {
      logits = model.decode(Tensor::from_ids({inputs.back()}, {1, 1}), memory, {}, &cache);
    } else {
      logits = model.decode(Tensor::from_ids(inputs, {1, static_cast<int64_t>(inputs.size())}), memory);
    }
    const int64_t next = sample_next(logits, options, gen, static_cast<int64_t>(out.size()));
    if (next == config.eos_token_id) break;
    out.push_back(next);
    inputs.push_back(next);
  }
  return out;
}

std::vector<std::vector<int64_t>> greedy_decode(EncoderDecoder& model, const Tensor& sources,
                                                const std::vector<int64_t>& source_lengths,
                                                int64_t max_tokens) {
  const EncoderDecoderConfig& config = model.config();
  NoGradGuard no_grad;
  model.eval();
  const Tensor memory = model.encode(sources, source_lengths);  // (B,S,C)
  const int64_t b = sources.size(0), v = config.vocab_size;
  const int64_t limit = std::min(max_tokens, config.max_position_embeddings - 1);
  DecoderCache cache = model.make_cache();
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(b));
  std::vector<int64_t> feed(static_cast<size_t>(b), config.decoder_start_token_id);
  std::vector<bool> done(static_cast<size_t>(b), false);
  int64_t running = b;
  for (int64_t step = 0; step < limit && running > 0; ++step) {
    const Tensor logits = model.decode(Tensor::from_ids(feed, {b, 1}), memory, source_lengths, &cache);
    const Tensor f32 = logits.dtype() == DType::f32 ? logits : logits.to(DType::f32);  // (B,1,V)
    for (int64_t r = 0; r < b; ++r) {
      if (done[static_cast<size_t>(r)]) continue;  // a finished row's input is ignored
      const float* row = f32.data<float>() + r * v;
      const int64_t next = std::max_element(row, row + v) - row;
      if (next == config.eos_token_id) {
        done[static_cast<size_t>(r)] = true;
        --running;
      } else {
        out[static_cast<size_t>(r)].push_back(next);
        feed[static_cast<size_t>(r)] = next;
      }
    }
  }
  return out;
}

}  // namespace tinygpt::nn
