#include "tinygpt/nn/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/skip_init.hpp"

namespace tinygpt::nn {

void GPTConfig::validate() const {
  const Operation op("GPTConfig");
  auto positive = [&op](const char* name, int64_t v) {
    if (v <= 0) throw SettingError(op, name, v, fmt::format("{} must be positive, got {}", name, v));
  };
  positive("vocab_size", vocab_size);
  positive("block_size", block_size);
  positive("n_layer", n_layer);
  positive("n_head", n_head);
  positive("n_embd", n_embd);
  if (n_embd % n_head != 0) {
    throw SettingError(op, {named("n_embd", n_embd), " is not divisible by ", named("n_head", n_head)});
  }
  if (!(dropout >= 0.0 && dropout < 1.0)) {
    throw SettingError(op, "dropout", dropout, fmt::format("dropout must be in [0, 1), got {}", dropout));
  }
  if (n_kv_head < 0 || n_head % kv_heads() != 0) {
    throw SettingError(op, {named("n_kv_head", n_kv_head), " does not divide ", named("n_head", n_head)});
  }
  if (position_embedding == PositionEmbedding::rope && (n_embd / n_head) % 2 != 0) {
    throw SettingError(op, {"rope needs an even head width, got ", named("n_embd", n_embd), " / ",
                            named("n_head", n_head), fmt::format(" = {}", n_embd / n_head)});
  }
  attention.validate("GPTConfig");
  check_pattern_positions(attention, position_embedding, "GPTConfig");
  // Training never shows a query more than block_size keys, so a longer reach is one the model
  // never learnt, and the window sizes the generation cache (W + G slots a layer).
  for (const auto& [name, reach] : {std::pair<const char*, int64_t>{"window", attention.window},
                                    {"global_tokens", attention.global_tokens},
                                    {"stride", attention.stride}}) {
    if (reach > block_size) {
      throw SettingError(op, {named(name, reach), " is beyond the context: ",
                              named("block_size", block_size), " is the most keys a query has"});
    }
  }
  if (attention.kind == AttentionPattern::Kind::bigbird) {
    attention.validate_blocks(block_size, "block_size", "GPTConfig");  // its blocks tile the context
  }
  if (!(rope_theta > 0.0) || !std::isfinite(rope_theta)) {
    throw SettingError(op, "rope_theta", rope_theta,
                       fmt::format("rope_theta must be positive, got {}", rope_theta));
  }
  if (!(layer_norm_epsilon > 0.0)) {
    throw SettingError(op, "layer_norm_epsilon", layer_norm_epsilon,
                       fmt::format("layer_norm_epsilon must be positive, got {}", layer_norm_epsilon));
  }
  if (!scale_attn_weights && attention.is_linear()) {
    throw SettingError(op, {"linear attention has no score scale to leave out (",
                            named("scale_attn_weights", "false"), ")"});
  }
  validate_pruned_heads();
}

int64_t GPTConfig::layer_heads(int64_t layer) const {
  const auto it = pruned_heads.find(layer);
  return n_head - (it == pruned_heads.end() ? 0 : static_cast<int64_t>(it->second.size()));
}

std::vector<int64_t> GPTConfig::kept_heads(int64_t layer) const {
  const auto it = pruned_heads.find(layer);
  std::vector<int64_t> kept;
  for (int64_t h = 0; h < n_head; ++h) {
    if (it == pruned_heads.end() || std::find(it->second.begin(), it->second.end(), h) == it->second.end()) {
      kept.push_back(h);
    }
  }
  return kept;
}

void GPTConfig::validate_pruned_heads() const {
  if (!pruned_heads.empty() && kv_heads() != n_head) {
    throw ValueError(fmt::format("GPTConfig: pruned_heads needs multi-head attention, not {} "
                                 "key/value heads for {} query heads", kv_heads(), n_head));
  }
  for (const auto& [layer, heads] : pruned_heads) {
    if (layer < 0 || layer >= n_layer) {
      throw ValueError(fmt::format("GPTConfig: pruned_heads names layer {} of {}", layer, n_layer));
    }
    for (size_t i = 0; i < heads.size(); ++i) {
      const bool repeated = std::find(heads.begin(), heads.begin() + static_cast<std::ptrdiff_t>(i), heads[i]) !=
                            heads.begin() + static_cast<std::ptrdiff_t>(i);
      if (heads[i] < 0 || heads[i] >= n_head || repeated) {
        throw ValueError(fmt::format("GPTConfig: pruned head {} of layer {} is {} (n_head {})", heads[i],
                                     layer, repeated ? "named twice" : "outside the layer", n_head));
      }
    }
    if (layer_heads(layer) < 1) {
      throw ValueError(fmt::format("GPTConfig: pruned_heads removes every head of layer {}", layer));
    }
  }
}

Block::Block(const GPTConfig& config, Generator& init, std::shared_ptr<Generator> noise,
             int64_t layer) {
  const double eps = config.layer_norm_epsilon;
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(config.n_embd, eps, config.bias));
  AttentionOptions options{config.n_embd, config.n_head, config.dropout, true, config.bias,
                           config.n_kv_head, config.position_embedding, config.rope_theta,
                           config.attention};
  options.scale_scores = config.scale_attn_weights;
  if (config.layer_heads(layer) != config.n_head) {
    options.n_heads = options.n_kv_heads = config.layer_heads(layer);
    options.head_dim = config.n_embd / config.n_head;
  }
  attn = register_module("attn", std::make_shared<MultiHeadSelfAttention>(options, init, noise));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(config.n_embd, eps, config.bias));
  mlp = register_module("mlp", std::make_shared<MLP>(config.n_embd, config.dropout, config.bias,
                                                     init, noise));
}

Tensor Block::forward(const Tensor& input, const std::vector<int64_t>& lengths, KVCache* cache) {
  const Tensor x = hook(HookPoint::resid_pre, input);  // (B,T,C)
  const Tensor h = hook(HookPoint::resid_mid,
                        x + hook(HookPoint::attn_out, attn->forward(ln_1->forward(x), lengths, cache)));
  return hook(HookPoint::resid_post, h + hook(HookPoint::mlp_out, mlp->forward(ln_2->forward(h))));
}

void Block::set_hooks(const LayerHooks* hooks) {
  hooks_ = hooks;
  attn->set_hooks(hooks);
}

Transformer::Transformer(const GPTConfig& config, Generator& init,
                         std::shared_ptr<Generator> noise) {
  wte = register_module("wte", std::make_shared<Embedding>(config.vocab_size, config.n_embd, init));
  if (config.position_embedding == PositionEmbedding::learned) {
    wpe = register_module("wpe", std::make_shared<Embedding>(config.block_size, config.n_embd, init));
  }
  drop = register_module("drop", std::make_shared<Dropout>(config.dropout, noise));
  h = register_module("h", std::make_shared<ModuleList<Block>>());
  for (int64_t i = 0; i < config.n_layer; ++i) h->push_back(std::make_shared<Block>(config, init, noise, i));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(config.n_embd,
                                                             config.layer_norm_epsilon, config.bias));
}

LMHead::LMHead(int64_t dim, int64_t vocab_size) {
  weight = register_parameter("weight", Tensor::zeros({vocab_size, dim}));
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// GPT-2's initialisation, by parameter name (as nanoGPT applies it); none under a SkipInitGuard.
void init_gpt2(Module& model, int64_t n_layer, Generator& gen) {
  if (init_skipped()) return;
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(n_layer));
  for (auto& [name, p] : model.named_parameters()) {
    if (p.ndim() == 2) {
      const double std = ends_with(name, "c_proj.weight") ? residual_std : 0.02;
      p.copy_(Tensor::randn(p.shape(), gen, p.dtype(), 0.0, std));
    } else {
      const bool norm_gain = name.find("ln_") != std::string::npos && ends_with(name, ".weight");
      p.fill_(norm_gain ? 1.0 : 0.0);
    }
  }
}

}  // namespace

GPT::GPT(const GPTConfig& config, uint64_t seed)
    : config_(config), noise_(std::make_shared<Generator>(seed ^ 0x5eedd20u)) {
  config.validate();
  Generator init(seed);
  transformer = register_module("transformer", std::make_shared<Transformer>(config, init, noise_));
  if (!config.tie_weights) {
    lm_head = register_module("lm_head", std::make_shared<LMHead>(config.n_embd, config.vocab_size));
  }
  init_gpt2(*this, config.n_layer, init);
  for (int64_t i = 0; i < config.n_layer; ++i) {
    hooks_.push_back(std::make_unique<LayerHooks>(i));
    (*transformer->h)[static_cast<size_t>(i)].set_hooks(hooks_.back().get());
  }
}

Tensor GPT::forward(const Tensor& tokens, const std::vector<int64_t>& lengths,
                    std::vector<KVCache>* cache) {
  return head(hidden(tokens, lengths, cache));
}

Tensor GPT::next_logits(const Tensor& tokens, std::vector<KVCache>* cache) {
  const Tensor x = hidden(tokens, {}, cache);
  return head(x.size(1) == 1 ? x : narrow(x, 1, x.size(1) - 1, 1));
}

Tensor GPT::hidden(const Tensor& tokens, const std::vector<int64_t>& lengths,
                   std::vector<KVCache>* cache) {
  if (tokens.ndim() != 2 || tokens.dtype() != DType::i64) {
    throw ShapeError(fmt::format("GPT: expects tokens (B,T) of i64, got {} {}",
                                 tokens.shape().str(), dtype_name(tokens.dtype())));
  }
  if (cache != nullptr && static_cast<int64_t>(cache->size()) != config_.n_layer) {
    throw ValueError(fmt::format("GPT: cache has {} layers, the model {}", cache->size(),
                                 config_.n_layer));
  }
  const int64_t past = cache != nullptr ? (*cache)[0].seen : 0;
  Tensor x = transformer->drop->forward(embed(tokens, past));  // (B,T,C)
  for (size_t i = 0; i < transformer->h->size(); ++i) {
    x = (*transformer->h)[i].forward(x, lengths, cache != nullptr ? &(*cache)[i] : nullptr);
  }
  return transformer->ln_f->forward(x);
}

Tensor GPT::head(const Tensor& x) const {
  if (head_bf16_ != nullptr && x.numel() == config_.n_embd) return linear_bf16(x, *head_bf16_);
  const Tensor& weight = lm_head ? lm_head->weight : transformer->wte->weight;  // (V,C)
  return matmul(x, weight, false, true);                                        // (B,T,V)
}

namespace {

void keep_bf16_weights(Module& module, bool keep) {
  if (auto* linear = dynamic_cast<Linear*>(&module)) linear->keep_bf16_weight(keep);
  for (const auto& child : module.children()) keep_bf16_weights(*child.second, keep);
}

}  // namespace

void GPT::set_generation_precision(Precision precision) {
  const bool keep = precision == Precision::bf16;
  keep_bf16_weights(*this, keep);
  const Tensor& weight = lm_head ? lm_head->weight : transformer->wte->weight;  // (V,C)
  head_bf16_ = keep ? std::make_shared<const Bf16Weight>(weight, true) : nullptr;
}

Tensor GPT::embed(const Tensor& tokens, int64_t past) {
  const int64_t t = tokens.size(1);
  const Tensor tok = transformer->wte->forward(tokens);  // (B,T,C)
  switch (config_.position_embedding) {
    case PositionEmbedding::learned: {
      if (past + t > config_.block_size) {
        throw IndexError(fmt::format(
            "GPT: sequence length {} exceeds the context length {} (learned positions)", past + t,
            config_.block_size));
      }
      std::vector<int64_t> positions(static_cast<size_t>(t));
      for (int64_t i = 0; i < t; ++i) positions[static_cast<size_t>(i)] = past + i;
      return tok + transformer->wpe->forward(Tensor::from_ids(positions, {t}));
    }
    case PositionEmbedding::sinusoidal:
      return tok + sinusoidal_positions(past, t, config_.n_embd, tok.dtype());
    default:  // rope and alibi act inside attention; none adds nothing
      return tok;
  }
}

std::vector<KVCache> GPT::make_cache() const {
  std::vector<KVCache> cache(static_cast<size_t>(config_.n_layer));
  if (config_.attention.is_linear()) {
    for (KVCache& layer : cache) layer.recurrent = true;
  }
  if (config_.attention.kind == AttentionPattern::Kind::window) {
    for (KVCache& layer : cache) {
      layer.ring = config_.attention.window + config_.attention.global_tokens;
      layer.globals = config_.attention.global_tokens;
    }
  }
  return cache;
}

bool GPT::generates_past_context() const {
  const PositionEmbedding pos = config_.position_embedding;
  if (config_.attention.is_linear()) return pos == PositionEmbedding::none;
  return config_.attention.kind == AttentionPattern::Kind::window &&
         (pos == PositionEmbedding::rope || pos == PositionEmbedding::alibi ||
          pos == PositionEmbedding::none);
}

int64_t GPT::kv_cache_positions(int64_t positions) const {
  if (config_.attention.is_linear()) return 0;
  if (config_.attention.kind == AttentionPattern::Kind::window) {
    return config_.attention.window + config_.attention.global_tokens;
  }
  return std::min(positions, config_.block_size);
}

int64_t GPT::recurrent_state_bytes() const {
  if (!config_.attention.is_linear()) return 0;
  const int64_t d = config_.n_embd / config_.n_head;
  // phi's width: the head's, or Performer's M features; the state is (width, d) plus width.
  const int64_t width = config_.attention.is_performer() ? config_.attention.features : d;
  return config_.n_layer * config_.kv_heads() * (width * d + width) *
         static_cast<int64_t>(sizeof(float));
}

int64_t GPT::kv_cache_bytes(int64_t length) const {
  return 2 * config_.n_layer * config_.kv_heads() * length * (config_.n_embd / config_.n_head) *
         static_cast<int64_t>(sizeof(float));
}

CausalLMShape GPT::shape() const {
  return {config_.vocab_size, config_.block_size, config_.n_layer, config_.n_head};
}

void GPT::set_keep_attention_weights(bool keep) {
  for (const auto& block : *transformer->h) block->attn->set_keep_attention_weights(keep);
}

std::vector<Tensor> GPT::attention_weights() const {
  std::vector<Tensor> out;
  for (const auto& block : *transformer->h) out.push_back(block->attn->attention_weights());
  return out;
}


std::vector<std::string> GPT::hook_names() const {
  std::vector<std::string> names;
  for (int64_t layer = 0; layer < config_.n_layer; ++layer) {
    for (int p = 0; p < kNumHookPoints; ++p) names.push_back(hook_name(layer, static_cast<HookPoint>(p)));
  }
  return names;
}

HookId GPT::add_hook(const std::string& name, Hook hook) {
  if (!hook) throw ValueError(Operation("add_hook"), fmt::format("the hook for {} is empty", name));
  for (int64_t layer = 0; layer < config_.n_layer; ++layer) {
    for (int p = 0; p < kNumHookPoints; ++p) {
      if (hook_name(layer, static_cast<HookPoint>(p)) == name) {
        hooks_[static_cast<size_t>(layer)]->add(static_cast<HookPoint>(p), next_hook_id_, std::move(hook));
        return next_hook_id_++;
      }
    }
  }
  std::string points;
  for (int p = 0; p < kNumHookPoints; ++p) {
    points += (p > 0 ? ", " : "") + std::string(hook_point_name(static_cast<HookPoint>(p)));
  }
  throw ValueError(Operation("add_hook"), fmt::format("no hook point '{}'; names are blocks.{{L}}.{{point}} "
                               "with L in [0, {}) and point one of {}",
                               name, config_.n_layer, points));
}

bool GPT::remove_hook(HookId id) {
  for (auto& layer : hooks_) {
    if (layer->remove(id)) return true;
  }
  return false;
}

ActivationCache GPT::run_with_cache(const Tensor& tokens, const HookFilter& filter) {
  ActivationCache cache;
  ScopedHooks recording(*this);
  for (const std::string& name : hook_names()) {
    if (filter && !filter(name)) continue;
    recording.add(name, [&cache, name](const Tensor& value) {
      cache.activations.emplace_back(name, value.detach());
      return value;
    });
  }
  cache.logits = forward(tokens);
  return cache;
}

}  // namespace tinygpt::nn
