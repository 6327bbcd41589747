#pragma once
// A LLaMA-style causal language model that is not in the library, written on its public API
// alone: RMSNorm and the SwiGLU feed-forward of ../custom_layers.hpp, rotary positions on q and k
// (the autograd op rotary_embedding), causal softmax attention, pre-norm residual blocks, a final
// RMSNorm and an untied (or tied) output head. Implementing nn::CausalLM is all a run needs:
// train_own_model.cpp trains it with checkpoints, exact resume, the log, evaluation, head scores
// and the explorer page. Tensor names follow Meta's LLaMA (tok_embeddings, layers.{i}.attention.wq,
// layers.{i}.feed_forward.w1, norm, output); shapes are (B,T,C) = batch, time, channels.
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../custom_layers.hpp"
#include "tinygpt/nn.hpp"
#include "tinygpt/nn/causal_lm.hpp"

namespace own {

using tinygpt::Generator;
using tinygpt::Tensor;
using tinygpt::nn::Linear;

struct OwnLlamaConfig {
  int64_t vocab_size = 0;  // a run sets it from its tokenizer
  int64_t block_size = 64;
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_embd = 64;
  int64_t hidden = 0;  // SwiGLU's width; 0 takes LLaMA's 8/3 n_embd, rounded up to 8
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  bool tie_weights = false;  // the output head reuses tok_embeddings

  int64_t head_dim() const { return n_embd / n_head; }
  int64_t ffn_width() const { return hidden > 0 ? hidden : (8 * n_embd / 3 + 7) / 8 * 8; }

  // Every field optional (the defaults above); a field of the wrong type, or sizes that cannot
  // work, throw ValueError naming the field.
  static OwnLlamaConfig from_json(const nlohmann::json& j) {
    OwnLlamaConfig c;
    const auto read = [&j](const char* name, auto& field) {
      if (!j.contains(name)) return;
      try {
        j.at(name).get_to(field);
      } catch (const nlohmann::json::exception& e) {
        throw tinygpt::ValueError(std::string("own-llama config: ") + name + ": " + e.what());
      }
    };
    read("vocab_size", c.vocab_size);
    read("block_size", c.block_size);
    read("n_layer", c.n_layer);
    read("n_head", c.n_head);
    read("n_embd", c.n_embd);
    read("hidden", c.hidden);
    read("norm_eps", c.norm_eps);
    read("rope_theta", c.rope_theta);
    read("tie_weights", c.tie_weights);
    c.validate();
    return c;
  }

  nlohmann::json to_json() const {
    return {{"model_type", "own-llama"}, {"vocab_size", vocab_size}, {"block_size", block_size},
            {"n_layer", n_layer},        {"n_head", n_head},         {"n_embd", n_embd},
            {"hidden", ffn_width()},     {"norm_eps", norm_eps},     {"rope_theta", rope_theta},
            {"tie_weights", tie_weights}};
  }

  void validate() const {
    const auto require = [](bool ok, const std::string& what) {
      if (!ok) throw tinygpt::ValueError("own-llama config: " + what);
    };
    require(vocab_size > 0, "vocab_size must be positive, got " + std::to_string(vocab_size));
    require(block_size > 0, "block_size must be positive, got " + std::to_string(block_size));
    require(n_layer > 0, "n_layer must be positive, got " + std::to_string(n_layer));
    require(n_head > 0 && n_embd > 0 && n_embd % n_head == 0,
            "n_embd (" + std::to_string(n_embd) + ") must be a positive multiple of n_head (" +
                std::to_string(n_head) + ")");
    require(head_dim() % 2 == 0, "RoPE needs an even head width n_embd / n_head, got " +
                                     std::to_string(head_dim()));
    require(hidden >= 0, "hidden must be 0 or positive, got " + std::to_string(hidden));
    require(norm_eps > 0.0, "norm_eps must be positive");
  }
};

// Multi-head causal self-attention with rotary positions. The (B,H,T,T) weights are formed
// explicitly, so they can be kept for the head analysis.
class Attention : public tinygpt::nn::Module {
 public:
  Attention(const OwnLlamaConfig& config, Generator& gen) : config_(config) {
    const int64_t c = config.n_embd;
    wq = register_module("wq", std::make_shared<Linear>(c, c, false, gen));
    wk = register_module("wk", std::make_shared<Linear>(c, c, false, gen));
    wv = register_module("wv", std::make_shared<Linear>(c, c, false, gen));
    wo = register_module("wo", std::make_shared<Linear>(c, c, false, gen));
  }

  Tensor forward(const Tensor& x) {  // x (B,T,C) -> (B,T,C)
    const int64_t b = x.size(0), t = x.size(1), h = config_.n_head, d = config_.head_dim();
    const auto rotate = [&](const Tensor& y) {  // every head of (B,T,C) turned by its position
      return tinygpt::rotary_embedding(y, d, config_.n_embd, 0, config_.rope_theta);
    };
    const auto heads = [&](const Tensor& y) {  // (B,T,C) -> (B,H,T,d)
      return tinygpt::permute(tinygpt::reshape(y, {b, t, h, d}), {0, 2, 1, 3});
    };
    const Tensor q = heads(rotate(wq->forward(x)));
    const Tensor k = heads(rotate(wk->forward(x)));
    const Tensor v = heads(wv->forward(x));
    // (B,H,T,d) @ (B,H,d,T) -> (B,H,T,T); a query sees no key after it.
    const Tensor scores = tinygpt::matmul(q, k, false, true) / std::sqrt(static_cast<double>(d));
    const Tensor weights = tinygpt::softmax(
        tinygpt::masked_fill(scores, tinygpt::nn::causal_mask(t, t), -INFINITY), -1);
    last_weights_ = keep_weights_ ? weights.detach() : Tensor();
    const Tensor y = tinygpt::matmul(weights, v);  // (B,H,T,d)
    // (B,H,T,d) -> (B,T,H,d) -> (B,T,C)
    return wo->forward(tinygpt::reshape(tinygpt::permute(y, {0, 2, 1, 3}), {b, t, config_.n_embd}));
  }

  void set_keep_weights(bool keep) { keep_weights_ = keep; }
  const Tensor& last_weights() const { return last_weights_; }

  std::shared_ptr<Linear> wq, wk, wv, wo;  // each (C,C)

 private:
  OwnLlamaConfig config_;
  bool keep_weights_ = false;
  Tensor last_weights_;  // (B,H,T,T) of the last forward, when kept
};

// Pre-norm block: x + attention(norm(x)), then x + feed_forward(norm(x)).
class Block : public tinygpt::nn::Module {
 public:
  Block(const OwnLlamaConfig& config, Generator& gen) {
    attention_norm = register_module(
        "attention_norm", std::make_shared<custom::RMSNorm>(config.n_embd, config.norm_eps));
    attention = register_module("attention", std::make_shared<Attention>(config, gen));
    ffn_norm = register_module("ffn_norm",
                               std::make_shared<custom::RMSNorm>(config.n_embd, config.norm_eps));
    feed_forward = register_module(
        "feed_forward", std::make_shared<custom::SwiGLU>(config.n_embd, config.ffn_width(), gen));
  }

  Tensor forward(const Tensor& x) {  // (B,T,C) -> (B,T,C)
    const Tensor h = x + attention->forward(attention_norm->forward(x));
    return h + feed_forward->forward(ffn_norm->forward(h));
  }

  std::shared_ptr<custom::RMSNorm> attention_norm;
  std::shared_ptr<Attention> attention;
  std::shared_ptr<custom::RMSNorm> ffn_norm;
  std::shared_ptr<custom::SwiGLU> feed_forward;
};

class OwnLlama : public tinygpt::nn::CausalLM {
 public:
  // `seed` draws the initial weights; the dropout generator is seeded from it too (this model
  // has no dropout, but a run checkpoints that generator's state whatever the model).
  OwnLlama(const OwnLlamaConfig& config, uint64_t seed)
      : config_(config), noise_(seed + 1) {
    config.validate();
    Generator gen(seed);
    tok_embeddings = register_module(
        "tok_embeddings",
        std::make_shared<tinygpt::nn::Embedding>(config.vocab_size, config.n_embd, gen));
    // N(0, 0.02) as LLaMA and GPT-2 start: N(0, 1) rows would give huge logits when tied.
    tok_embeddings->weight.copy_(
        Tensor::randn(tok_embeddings->weight.shape(), gen, tinygpt::DType::f32, 0.0, 0.02));
    layers = register_module("layers", std::make_shared<tinygpt::nn::ModuleList<Block>>());
    for (int64_t i = 0; i < config.n_layer; ++i) layers->push_back(std::make_shared<Block>(config, gen));
    norm = register_module("norm", std::make_shared<custom::RMSNorm>(config.n_embd, config.norm_eps));
    if (!config.tie_weights) {
      output = register_module("output",
                               std::make_shared<Linear>(config.n_embd, config.vocab_size, false, gen));
    }
  }

  Tensor logits(const Tensor& tokens) override {  // tokens (B,T) i64 -> (B,T,V)
    Tensor x = tok_embeddings->forward(tokens);   // (B,T,C)
    for (const auto& block : *layers) x = block->forward(x);
    x = norm->forward(x);
    if (output) return output->forward(x);                                // (B,T,C) @ (C,V)
    return tinygpt::matmul(x, tok_embeddings->weight, false, true);      // (B,T,C) @ (V,C)^T
  }

  tinygpt::nn::CausalLMShape shape() const override {
    tinygpt::nn::CausalLMShape s;
    s.vocab_size = config_.vocab_size;
    s.block_size = config_.block_size;
    s.n_layer = config_.n_layer;
    s.n_head = config_.n_head;
    return s;
  }
  Generator& dropout_generator() override { return noise_; }
  void set_keep_attention_weights(bool keep) override {
    for (const auto& block : *layers) block->attention->set_keep_weights(keep);
  }
  std::vector<Tensor> attention_weights() const override {
    std::vector<Tensor> out;
    for (const auto& block : *layers) out.push_back(block->attention->last_weights());
    return out;
  }
  std::string config_json() const override { return config_.to_json().dump(2); }
  const OwnLlamaConfig& config() const { return config_; }

  std::shared_ptr<tinygpt::nn::Embedding> tok_embeddings;  // (V,C)
  std::shared_ptr<tinygpt::nn::ModuleList<Block>> layers;
  std::shared_ptr<custom::RMSNorm> norm;
  std::shared_ptr<Linear> output;  // (C,V), null when tied

 private:
  OwnLlamaConfig config_;
  Generator noise_;
};

}  // namespace own
