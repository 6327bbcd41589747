#pragma once
// An encoder-only transformer trained as a masked language model, as Hugging Face's
// BertForMaskedLM computes it: token + learned position + token-type-0 embeddings, LayerNorm,
// post-LN blocks x = LN(x + drop(attn(x))), x = LN(x + drop(ffn(x))) with exact-erf GELU and
// bidirectional self-attention, and the MLM head dense -> GELU -> LayerNorm -> decoder tied to
// the word embeddings plus an output bias. Submodules carry BERT's names, so state_dict() reads
// like a BertForMaskedLM checkpoint except inside the attention, which is the encoder-decoder's
// MultiHeadAttention (q_proj, k_proj, v_proj, out_proj for BERT's attention.self.{query,key,
// value} and attention.output.dense; train's BERT files rename them):
//   bert.embeddings.{word_embeddings,position_embeddings,token_type_embeddings}.weight
//   bert.embeddings.LayerNorm.{weight,bias}
//   bert.encoder.layer.{i}.attention.self.{q_proj,k_proj,v_proj,out_proj}.{weight,bias}
//   bert.encoder.layer.{i}.attention.output.LayerNorm.{weight,bias}
//   bert.encoder.layer.{i}.intermediate.dense.{weight,bias}
//   bert.encoder.layer.{i}.output.{dense,LayerNorm}.{weight,bias}
//   cls.predictions.transform.{dense,LayerNorm}.{weight,bias}     cls.predictions.bias
// Linear weights are (out, in), as nn.Linear stores them. Beyond BERT: the GPT's other position
// schemes (sinusoidal, RoPE, symmetric ALiBi -m|i - j|, none; only learned has
// position_embeddings), and pre-LN blocks x + drop(attn(LN(x))) with a final LayerNorm
// (bert.encoder.LayerNorm) as an option.
#include <memory>
#include <vector>

#include "tinygpt/nn/dropout.hpp"
#include "tinygpt/nn/embedding.hpp"
#include "tinygpt/nn/layer_norm.hpp"
#include "tinygpt/nn/multi_head_attention.hpp"
#include "tinygpt/nn/position.hpp"

namespace tinygpt::nn {

// Fields named as BERT's config.json names them where they mean the same.
struct BertConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 128;
  int64_t num_hidden_layers = 2;
  int64_t num_attention_heads = 4;
  int64_t intermediate_size = 512;
  int64_t max_position_embeddings = 128;  // the longest sequence, [CLS] and [SEP] included
  int64_t type_vocab_size = 2;            // rows of token_type_embeddings; inputs use type 0
  double layer_norm_eps = 1e-12;
  double hidden_dropout_prob = 0.0;           // on the embeddings and each sublayer's output
  double attention_probs_dropout_prob = 0.0;  // on the attention weights
  double initializer_range = 0.02;            // N(0, initializer_range) weights
  int64_t pad_token_id = 0;
  PositionEmbedding position = PositionEmbedding::learned;
  double rope_theta = 10000.0;
  bool pre_layer_norm = false;  // BERT's blocks are post-LN
  // The self-attention: full, or BigBird's window, global tokens and random key blocks, made
  // bidirectional over max_position_embeddings (attention_pattern()), as an encoder-decoder's
  // encoder runs it.
  AttentionPattern attention{};

  void validate() const;  // SettingError naming the first bad field
  AttentionPattern attention_pattern() const;  // the keys each query sees; validate's errors
};

// A dense layer and/or a LayerNorm, registered under BERT's names "dense" and "LayerNorm" (either may
// be absent): the shape of BERT's attention.output, intermediate, output and the head's transform.
class DenseNorm : public Module {
 public:
  DenseNorm(int64_t in, int64_t out, bool with_dense, bool with_norm, double eps, Generator& init);
  std::shared_ptr<Linear> dense;
  std::shared_ptr<LayerNorm> norm;  // registered as "LayerNorm"
};

class BertAttention : public Module {
 public:
  BertAttention(const BertConfig& config, Generator& init, std::shared_ptr<Generator> noise);
  std::shared_ptr<MultiHeadAttention> self;  // bidirectional; its out_proj is BERT's output.dense
  std::shared_ptr<DenseNorm> output;         // the LayerNorm only
};

class BertLayer : public Module {
 public:
  BertLayer(const BertConfig& config, Generator& init, std::shared_ptr<Generator> noise);
  // x (B,T,C); `lengths`: each sequence's valid positions (padding after them) -> (B,T,C)
  Tensor forward(const Tensor& x, const std::vector<int64_t>& lengths);

  std::shared_ptr<BertAttention> attention;
  std::shared_ptr<DenseNorm> intermediate;  // dense (C -> intermediate_size), then GELU
  std::shared_ptr<DenseNorm> output;        // dense (intermediate_size -> C), LayerNorm

 private:
  bool pre_layer_norm_;
  std::shared_ptr<Dropout> dropout_;
};

class BertEmbeddings : public Module {
 public:
  BertEmbeddings(const BertConfig& config, Generator& init, std::shared_ptr<Generator> noise);
  // tokens (B,T) i64 -> (B,T,C): word + position (learned or sinusoidal) + type 0, LayerNorm,
  // dropout.
  Tensor forward(const Tensor& tokens) const;

  std::shared_ptr<Embedding> word_embeddings;
  std::shared_ptr<Embedding> position_embeddings;  // learned positions only
  std::shared_ptr<Embedding> token_type_embeddings;
  std::shared_ptr<LayerNorm> norm;  // registered as "LayerNorm"

 private:
  PositionEmbedding position_;
  std::shared_ptr<Dropout> dropout_;
};

class BertStack : public Module {
 public:
  BertStack(const BertConfig& config, Generator& init, std::shared_ptr<Generator> noise);
  std::shared_ptr<ModuleList<BertLayer>> layer;
  std::shared_ptr<LayerNorm> norm;  // "LayerNorm": pre-LN's final LayerNorm, else null
};

class BertBody : public Module {
 public:
  BertBody(const BertConfig& config, Generator& init, std::shared_ptr<Generator> noise);
  std::shared_ptr<BertEmbeddings> embeddings;
  std::shared_ptr<BertStack> encoder;
};

// cls.predictions: transform (dense, GELU, LayerNorm), then the tied decoder and `bias`.
class BertPredictions : public Module {
 public:
  BertPredictions(const BertConfig& config, Generator& init);
  std::shared_ptr<DenseNorm> transform;
  Tensor bias;  // (V)
};

class BertHeads : public Module {
 public:
  BertHeads(const BertConfig& config, Generator& init);
  std::shared_ptr<BertPredictions> predictions;
};

class BertForMaskedLM : public Module {
 public:
  // Weights N(0, initializer_range), biases 0, LayerNorm 1/0. `seed` also seeds the dropout
  // generator.
  BertForMaskedLM(const BertConfig& config, uint64_t seed);

  // tokens (B,T) i64 with each row's `lengths` valid tokens (padding after them; empty: all
  // valid) -> the last layer's hidden states (B,T,C).
  Tensor encode(const Tensor& tokens, const std::vector<int64_t>& lengths = {});
  // -> MLM logits (B,T,V).
  Tensor forward(const Tensor& tokens, const std::vector<int64_t>& lengths = {});
  // Mean cross-entropy over the positions whose label is not kIgnoreIndex (the chosen ones).
  Tensor loss(const Tensor& tokens, const std::vector<int64_t>& lengths, const Tensor& labels);
  static constexpr int64_t kIgnoreIndex = -100;

  const BertConfig& config() const { return config_; }
  Generator& dropout_generator() { return *noise_; }

  // Attention weights (B,H,T,T) of the last forward per layer, kept only while
  // set_keep_attention_weights(true).
  void set_keep_attention_weights(bool keep);
  std::vector<Tensor> attention_weights() const;

  std::shared_ptr<BertBody> bert;
  std::shared_ptr<BertHeads> cls;

 private:
  BertConfig config_;
  std::shared_ptr<Generator> noise_;
};

}  // namespace tinygpt::nn
