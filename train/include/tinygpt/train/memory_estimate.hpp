#pragma once
// What a training run will need in memory, estimated before anything is allocated, and the
// check that refuses a run the machine cannot hold (an absurd shape would otherwise meet
// std::bad_alloc or the OOM killer minutes later, naming no setting).
//
//   model bytes       = 4 x parameters x copies; copies: weights + gradients + AdamW m and v (4),
//                       or weights + gradients (+ momentum) for SGD (2 or 3)
//   activation bytes  = 4 x B x T x (L x (kActivationWidths x C + a x H x T) + 3 x V)
// for one micro-batch of B rows of T tokens, L layers of width C and H heads, vocabulary V.
// kActivationWidths = 20 vectors of width C per token and layer are what the forward keeps for
// the backward (layer norms, packed q/k/v, the heads' output, the projections, the MLP's 4C
// twice, residuals) plus the gradients alive at the backward's peak, with a margin over bench's
// allocator peak (docs/RUNS.md holds the comparison). The fused causal attention holds nothing
// of size T x T, so a = 0; with dropout the attention takes the unfused path that keeps its
// scores, probabilities, dropped probabilities and a gradient, a = 4. The 3 V are the logits,
// their softmax and gradient.
// It is meant to be roughly right, so that only a run far beyond the machine is refused.
//
// An encoder-decoder's micro-batch of B pairs, source and target each up to P positions
// (max_position_embeddings), with encoder and decoder layers of width C, FFN width F and H heads:
//   activation bytes  = 4 x B x P x (L_enc x (12 C + 2 F + 2 H P) + L_dec x (18 C + 2 F + 4 H P)
//                                    + 3 V)
// the GPT's 20 C with the MLP's 2 x 4C as 2 F, the decoder's cross-attention adding 6 C, and the
// (P,P) maps its unfused attention holds at the backward's peak, two per attention (the decoder
// has two attentions). Peak RSS of bench --arch encoder-decoder over 7 shapes (C 64-512, H 4-8,
// P 32-256, 2-4 layers) fitted 43 C + 5.6 H P per pair of layers; this says 46 C + 6 H P.
//
// An encoder (BERT) of L layers is the encoder-decoder's encoder with an MLM head:
//   activation bytes  = 4 x B x P x (L x (12 C + 2 F + 2 H P) + 3 V)
//
// Evaluation (tinygpt eval) keeps no graph, gradients or optimiser state, and the weights are
// loaded before it is checked, so its estimate is activations alone (model bytes 0):
//   GPT, `rows` windows of T tokens:       activation bytes = 4 x rows x T x (kEvalWidths x C + V)
//   encoder-decoder, `rows` pairs whose longest source or target (with its start or end token)
//   takes P positions:                     activation bytes = 4 x rows x P x (32 C + 3 H P + V)
//   (H: the encoder's or the decoder's head count, the larger)
// Without a graph each layer's tensors are freed while the next one runs, so layers do not add
// up: the MLP's 4C buffers and the logits are what peak. Peak RSS, with what the caching
// allocator and the C library keep of freed buffers, grew per token by 20.7-23.7 C + 0.9-1.0 V
// (GPT: 1, 2 and 4 layers, C 128-256, T 64-512, V 18-3000, every position scheme and attention)
// and per pair by 0.81-0.88x the encoder-decoder formula (C 128 and 256, H 4 and 8, 1 and 2
// layers, P 101).
#include <cstdint>
#include <string>
#include <vector>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/nn/bert.hpp"
#include "tinygpt/nn/causal_lm.hpp"
#include "tinygpt/nn/encoder_decoder.hpp"
#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::train {

inline constexpr int64_t kActivationWidths = 20;
inline constexpr int64_t kEvalWidths = 24;

// A decoder-only transformer's shape as the memory formulas read it: a GPT's, or any model's
// given by hand (`tinygpt memory`), whose head width need not be d_model / heads.
struct MemoryShape {
  int64_t layers = 0;    // L
  int64_t heads = 0;     // H
  int64_t kv_heads = 0;  // KV: key/value heads (grouped-query), H for plain multi-head attention
  int64_t d_model = 0;   // C
  int64_t d_head = 0;    // dh
  int64_t context = 0;   // T: positions of one sequence
  int64_t batch = 1;     // B: sequences at once
  int64_t vocab_size = 0;         // V (0: embeddings and logits left out)
  int64_t position_rows = 0;      // rows of a learned position table (0: none)
  bool bias = true;
  bool tie_weights = true;        // the LM head reuses the token embedding
  std::string dtype = "f32";      // f32, bf16 or f16

  double value_bytes() const { return dtype == "f32" ? 4.0 : 2.0; }

  // SettingError naming the first setting no model has (n_kv_head not dividing n_head, a dtype
  // that is not f32, bf16 or f16).
  void validate() const;
};

// The shape of a GPT of `config` at its full context, `batch` sequences in f32.
MemoryShape memory_shape(const nn::GPTConfig& config, int64_t batch);

// Bytes of each thing a model of that shape holds (each formula in shape_memory_formulas()).
struct ShapeMemory {
  int64_t parameters = 0;
  double parameter_bytes = 0.0;   // the weights alone
  double activation_bytes = 0.0;  // what training keeps for the backward, score maps aside
  double score_bytes = 0.0;       // one T x T map of attention scores per head, layer and sequence
  double kv_cache_bytes = 0.0;    // every layer's keys and values at T positions, per sequence
};
ShapeMemory shape_memory(const MemoryShape& shape);
// The formulas shape_memory computes, one a line, in the letters of MemoryShape's comments.
std::string shape_memory_formulas();

// A shape the source texts work an example on, by name (`tinygpt memory --preset NAME`).
struct MemoryPreset {
  std::string name;
  std::string what;  // the model, and which of shape_memory's figures the texts quote
  MemoryShape shape;
};
const std::vector<MemoryPreset>& memory_presets();

struct MemoryEstimate {
  int64_t parameters = 0;
  double model_bytes = 0.0;
  double activation_bytes = 0.0;
  double total_bytes() const { return model_bytes + activation_bytes; }
};

// The parameters of a GPT of `config` (exactly nn::GPT::num_parameters(), without building it).
int64_t parameter_count(const nn::GPTConfig& config);
// `micro_batch_rows` sequences per forward/backward; `optimizer` "adamw" or "sgd" (with
// `momentum` > 0 keeping a buffer).
MemoryEstimate estimate_training_memory(const nn::GPTConfig& config, int64_t micro_batch_rows,
                                        const std::string& optimizer, double momentum = 0.0);

// The same for an encoder-decoder (exactly nn::EncoderDecoder::num_parameters()); its micro-batch
// is `micro_batch_rows` pairs.
int64_t parameter_count(const nn::EncoderDecoderConfig& config);
MemoryEstimate estimate_training_memory(const nn::EncoderDecoderConfig& config,
                                        int64_t micro_batch_rows, const std::string& optimizer,
                                        double momentum = 0.0);

// The same for an encoder (exactly nn::BertForMaskedLM::num_parameters()); its micro-batch is
// `micro_batch_rows` windows of max_position_embeddings positions.
int64_t parameter_count(const nn::BertConfig& config);
MemoryEstimate estimate_training_memory(const nn::BertConfig& config, int64_t micro_batch_rows,
                                        const std::string& optimizer, double momentum = 0.0);

// Any causal LM's (a model of one's own, whose shape no formula knows), measured: the parameters'
// copies as above, and as activations the allocator's peak over one row's forward and backward
// on the model's context, less the gradients, times `micro_batch_rows`. The row runs in eval mode
// (no dropout draws) and leaves the parameters and their (undefined) gradients as it found them.
MemoryEstimate measure_training_memory(nn::CausalLM& model, int64_t micro_batch_rows,
                                       const std::string& optimizer, double momentum = 0.0);

// What evaluating `rows` windows of `block` tokens in one forward pass adds to a loaded GPT.
MemoryEstimate estimate_eval_memory(const nn::GPTConfig& config, int64_t rows, int64_t block);
// The same for `rows` pairs of at most `positions` positions each, through an encoder-decoder.
MemoryEstimate estimate_eval_memory(const nn::EncoderDecoderConfig& config, int64_t rows,
                                    int64_t positions);

// Bytes this process can still allocate without swapping: MemAvailable of /proc/meminfo (else
// the free physical pages, sysconf), capped by a cgroup v2 memory limit when one is set.
double available_memory_bytes();

// The run does not fit: the estimate and what is available, with a message naming the knobs.
class MemoryError : public Error {
 public:
  MemoryError(const MemoryEstimate& estimate, double available);
  // "this run needs about X GiB (model Y GiB, activations Z GiB) but the machine has W GiB
  // available; lower <activation_knobs> (activations) or <model_knobs> (model)"; without model
  // bytes (evaluation) "this needs about Z GiB of activations but the machine has W GiB
  // available; lower <activation_knobs>".
  std::string message(const std::string& activation_knobs, const std::string& model_knobs) const;

 private:
  MemoryEstimate estimate_;
  double available_;
};

// Throws MemoryError when the estimate exceeds available_memory_bytes().
void check_memory(const MemoryEstimate& estimate);

}  // namespace tinygpt::train
