#pragma once
// What a run, its evaluation and its head analysis need of a causal language model. The GPT is
// one; a model of your own (examples/own_model) becomes one by implementing these, and then
// trains through train::Run and train::fit with checkpoints, exact resume, the log, evaluation,
// head scores and the explorer page, as the GPT does.
#include <cstdint>
#include <string>
#include <vector>

#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/nn/module.hpp"

namespace tinygpt::nn {

// The sizes the run and the analysis read off a model.
struct CausalLMShape {
  int64_t vocab_size = 0;
  int64_t block_size = 0;  // the longest context it is trained on
  int64_t n_layer = 0;     // attention layers, each with n_head heads
  int64_t n_head = 0;
};

class CausalLM : public Module {
 public:
  static constexpr int64_t kIgnoreIndex = -100;  // a target that is not scored

  // tokens (B,T) i64 -> logits (B,T,V).
  virtual Tensor logits(const Tensor& tokens) = 0;
  // Mean cross-entropy of the next-token predictions; targets equal to kIgnoreIndex are skipped.
  virtual Tensor loss(const Tensor& tokens, const Tensor& targets);
  virtual CausalLMShape shape() const = 0;
  // The generator every dropout layer draws from: its state belongs in a checkpoint.
  virtual Generator& dropout_generator() = 0;
  // Attention weights (B,H,T,T) of the last forward, one per layer, after
  // set_keep_attention_weights(true) (training leaves it off: memory).
  virtual void set_keep_attention_weights(bool keep) = 0;
  virtual std::vector<Tensor> attention_weights() const = 0;
  // config.json's text. Its "model_type" names the factory that builds the model again when a
  // checkpoint is loaded (train::register_causal_lm).
  virtual std::string config_json() const = 0;
};

}  // namespace tinygpt::nn
