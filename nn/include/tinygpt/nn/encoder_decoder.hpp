#pragma once
// A pre-LayerNorm transformer encoder-decoder (Vaswani et al. 2017, with the GPT's pre-LN
// blocks). Submodules are named as Hugging Face's BART family names them, and linear weights
// are stored (out, in) as nn.Linear stores them, so state_dict() reads like a BART checkpoint:
//   model.shared.weight (V,C)                        token embedding of both stacks and the head
//   model.encoder.embed_positions.weight (P,C)       model.decoder.embed_positions.weight (P,C)
//   model.encoder.layers.{i}.self_attn.{q_proj,k_proj,v_proj,out_proj}.{weight,bias}
//   model.encoder.layers.{i}.{self_attn_layer_norm,fc1,fc2,final_layer_norm}.{weight,bias}
//   model.decoder.layers.{i}.encoder_attn.{q_proj,k_proj,v_proj,out_proj}.{weight,bias}
//   model.decoder.layers.{i}.encoder_attn_layer_norm.{weight,bias} (plus the encoder layer's)
//   model.encoder.layer_norm.{weight,bias}           model.decoder.layer_norm.{weight,bias}
// Differences from BART (docs/SEQ2SEQ.md): LayerNorm before each sublayer, not after, and a
// final LayerNorm on each stack; no layernorm_embedding; positions start at 0 (BART offsets them
// by 2); embeddings are not scaled; the activation is GELU's tanh form; no final_logits_bias.
#include <memory>
#include <string>
#include <vector>

#include "tinygpt/nn/dropout.hpp"
#include "tinygpt/nn/embedding.hpp"
#include "tinygpt/nn/layer_norm.hpp"
#include "tinygpt/nn/multi_head_attention.hpp"
#include "tinygpt/nn/sampler.hpp"

namespace tinygpt::nn {

// Fields named as BART's config.json names them where they mean the same.
struct EncoderDecoderConfig {
  int64_t vocab_size = 0;
  int64_t d_model = 128;
  int64_t encoder_layers = 2;
  int64_t decoder_layers = 2;
  int64_t encoder_attention_heads = 4;
  int64_t decoder_attention_heads = 4;
  int64_t encoder_ffn_dim = 512;
  int64_t decoder_ffn_dim = 512;
  int64_t max_position_embeddings = 64;  // the longest source, and target with its start token
  double dropout = 0.0;            // on each sublayer's output and on the attention weights
  double layer_norm_epsilon = 1e-5;
  double init_std = 0.02;          // N(0, init_std) weights, as BART's init_std
  int64_t pad_token_id = 0;
  int64_t bos_token_id = 1;
  int64_t eos_token_id = 2;
  int64_t decoder_start_token_id = 1;  // the decoder's first input (BART's is its eos)
  // How the decoder sees the source: cross-attention scored by cross_score, or (false) only the
  // mean of the encoder output over the source, added to every decoder input -- the one
  // fixed-size vector of the RNN encoder-decoders that attention was invented to remove.
  bool cross_attention = true;
  AttentionScore cross_score = AttentionScore::dot;
  // The encoder's self-attention: full, or BigBird's window, global tokens and random key blocks,
  // made bidirectional over max_position_embeddings (encoder_pattern()).
  AttentionPattern encoder_attention{};

  void validate() const;  // ValueError naming the first bad field
  // The keys each encoder query sees: encoder_attention, bidirectional.
  AttentionPattern encoder_pattern() const;  // ValueError naming the first bad field
};

// Encoder block: x + drop(self_attn(ln(x))), then x + drop(fc2(gelu(fc1(ln(x))))).
class EncoderLayer : public Module {
 public:
  EncoderLayer(const EncoderDecoderConfig& config, Generator& init, std::shared_ptr<Generator> noise);
  // x (B,S,C); `lengths`: each source's valid positions (the rest is padding) -> (B,S,C)
  Tensor forward(const Tensor& x, const std::vector<int64_t>& lengths);

  std::shared_ptr<MultiHeadAttention> self_attn;  // bidirectional
  std::shared_ptr<LayerNorm> self_attn_layer_norm;
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<LayerNorm> final_layer_norm;
  std::shared_ptr<Dropout> dropout;
};

// The caches of one decoding: per decoder layer, its self-attention's keys and values so far and
// its cross-attention's projection of the encoder output (computed at the first step).
struct DecoderCache {
  std::vector<KVCache> self, cross;
};

// Decoder block: causal self-attention, cross-attention on the encoder output, MLP; each
// x + drop(sublayer(ln(x))). Without cross_attention, encoder_attn and its LayerNorm are null.
class DecoderLayer : public Module {
 public:
  DecoderLayer(const EncoderDecoderConfig& config, Generator& init, std::shared_ptr<Generator> noise);
  // y (B,T,C), memory (B,S,C) with `memory_lengths` valid positions -> (B,T,C). With caches, y
  // continues the positions already decoded.
  Tensor forward(const Tensor& y, const Tensor& memory, const std::vector<int64_t>& memory_lengths,
                 KVCache* self_cache = nullptr, KVCache* cross_cache = nullptr);

  std::shared_ptr<MultiHeadAttention> self_attn;  // causal
  std::shared_ptr<LayerNorm> self_attn_layer_norm;
  std::shared_ptr<MultiHeadAttention> encoder_attn;
  std::shared_ptr<LayerNorm> encoder_attn_layer_norm;
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<LayerNorm> final_layer_norm;
  std::shared_ptr<Dropout> dropout;
};

// One stack: learned positions, its layers, a final LayerNorm. The token embedding is the
// model's shared one, held but not registered here (it is model.shared).
template <class Layer>
class Stack : public Module {
 public:
  Stack(const EncoderDecoderConfig& config, int64_t layers, std::shared_ptr<Embedding> shared,
        Generator& init, std::shared_ptr<Generator> noise);
  // tokens (B,T) at positions past.. -> token + position embeddings after dropout (B,T,C)
  Tensor embed(const Tensor& tokens, int64_t past) const;

  std::shared_ptr<Embedding> embed_positions;
  std::shared_ptr<ModuleList<Layer>> layers;
  std::shared_ptr<LayerNorm> layer_norm;

 private:
  std::shared_ptr<Embedding> shared_;
  std::shared_ptr<Dropout> dropout_;
};

// BART's "model" level: the shared embedding and the two stacks.
class EncoderDecoderBody : public Module {
 public:
  EncoderDecoderBody(const EncoderDecoderConfig& config, Generator& init,
                     std::shared_ptr<Generator> noise);
  std::shared_ptr<Embedding> shared;
  std::shared_ptr<Stack<EncoderLayer>> encoder;
  std::shared_ptr<Stack<DecoderLayer>> decoder;
};

class EncoderDecoder : public Module {
 public:
  // Weights N(0, init_std), biases 0, LayerNorm 1/0. `seed` also seeds the dropout generator.
  EncoderDecoder(const EncoderDecoderConfig& config, uint64_t seed);

  // source (B,S) i64 with each row's `source_lengths` valid tokens (padding after them; empty:
  // all valid) -> the encoder's output (B,S,C).
  Tensor encode(const Tensor& source, const std::vector<int64_t>& source_lengths = {});
  // Decoder inputs (B,T) i64 (the start token, then the target) over `memory` -> logits (B,T,V).
  // With `cache` (make_cache()), the inputs continue the positions already decoded.
  Tensor decode(const Tensor& inputs, const Tensor& memory,
                const std::vector<int64_t>& source_lengths = {}, DecoderCache* cache = nullptr);
  Tensor forward(const Tensor& source, const std::vector<int64_t>& source_lengths,
                 const Tensor& inputs);
  // Mean cross-entropy of targets (B,T) (kIgnoreIndex skipped: padding) given decoder inputs.
  Tensor loss(const Tensor& source, const std::vector<int64_t>& source_lengths,
              const Tensor& inputs, const Tensor& targets);
  static constexpr int64_t kIgnoreIndex = -100;

  DecoderCache make_cache() const;
  const EncoderDecoderConfig& config() const { return config_; }
  Generator& dropout_generator() { return *noise_; }

  // Attention weights of the last forward per layer, (B,H,Tq,Tk); kept only while
  // set_keep_attention_weights(true) (training leaves it off: memory).
  void set_keep_attention_weights(bool keep);
  std::vector<Tensor> encoder_attention_weights() const;
  std::vector<Tensor> decoder_attention_weights() const;
  std::vector<Tensor> cross_attention_weights() const;  // empty without cross-attention

  std::shared_ptr<EncoderDecoderBody> model;

 private:
  EncoderDecoderConfig config_;
  std::shared_ptr<Generator> noise_;
};

// Decodes the target of one `source` (token ids, no padding): the decoder starts from
// decoder_start_token_id and stops after eos_token_id (not returned), after options.tokens new
// tokens, or at the decoder's max_position_embeddings. Greedy at temperature 0, else sampled
// (top_k as SampleOptions). With options.use_cache, each step runs the decoder on one position
// with its self-attention cache, and the encoder output's keys and values are projected once.
std::vector<int64_t> generate(EncoderDecoder& model, const std::vector<int64_t>& source,
                              const SampleOptions& options);
// Greedy decoding of a batch, all rows a step at a time through the caches: sources (B,S) with
// `source_lengths` valid tokens each -> each row's tokens up to its eos (not returned), at most
// `max_tokens` and the decoder's positions. Row b equals generate() of its source at
// temperature 0 (up to rounding in the batched products).
std::vector<std::vector<int64_t>> greedy_decode(EncoderDecoder& model, const Tensor& sources,
                                                const std::vector<int64_t>& source_lengths,
                                                int64_t max_tokens);

}  // namespace tinygpt::nn
