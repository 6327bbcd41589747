#pragma once
// A GPT-2 style causal language model. Submodules are named as Hugging Face's GPT2LMHeadModel
// names them, so state_dict() already has GPT-2's tensor names and shapes:
//   transformer.wte.weight (V,C)         transformer.wpe.weight (T,C), only for learned positions
//   transformer.h.{i}.ln_1.{weight,bias} transformer.h.{i}.attn.c_attn.{weight (C,C+2KV), bias}
//   transformer.h.{i}.attn.c_proj.{weight (C,C), bias}   transformer.h.{i}.ln_2.{weight,bias}
//   transformer.h.{i}.mlp.c_fc.{weight (C,4C), bias}     transformer.h.{i}.mlp.c_proj.{weight (4C,C), bias}
//   transformer.ln_f.{weight,bias}       lm_head.weight (V,C), only when not tied to wte
// (KV = n_kv_head x head width: C with multi-head attention, where c_attn is GPT-2's (C,3C).)
#include <map>
#include <memory>
#include <vector>

#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/nn/attention.hpp"
#include "tinygpt/nn/embedding.hpp"
#include "tinygpt/nn/causal_lm.hpp"
#include "tinygpt/nn/hooks.hpp"
#include "tinygpt/nn/layer_norm.hpp"
#include "tinygpt/nn/mlp.hpp"

namespace tinygpt::nn {

struct GPTConfig {
  int64_t vocab_size = 0;
  int64_t block_size = 64;  // context length (GPT-2's n_positions)
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  double dropout = 0.0;
  bool bias = true;
  bool tie_weights = true;  // the LM head reuses the token embedding
  double layer_norm_epsilon = 1e-5;
  PositionEmbedding position_embedding = PositionEmbedding::learned;
  double rope_theta = 10000.0;  // RoPE's base
  int64_t n_kv_head = 0;        // key/value heads (grouped-query); 0 means n_head, 1 multi-query
  AttentionPattern attention{};  // which earlier keys each query sees: full, or a sliding window
  // Scores divided by sqrt(head width), as every transformer does; false keeps the raw dot
  // products, to show why the scale is there (GPT-2's scale_attn_weights).
  bool scale_attn_weights = true;

  // Heads removed for good, by layer, in their original numbering (GPT-2's config.pruned_heads):
  // such a layer has fewer heads of the same width, and smaller c_attn and c_proj.
  std::map<int64_t, std::vector<int64_t>> pruned_heads;

  int64_t kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int64_t layer_heads(int64_t layer) const;  // n_head less the layer's pruned heads
  // The original numbers of the heads the layer has, in the order its c_attn holds them.
  std::vector<int64_t> kept_heads(int64_t layer) const;
  void validate() const;  // ValueError naming the first bad field

 private:
  void validate_pruned_heads() const;
};

// Pre-LayerNorm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class Block : public Module {
 public:
  Block(const GPTConfig& config, Generator& init, std::shared_ptr<Generator> noise,
        int64_t layer = 0);  // the layer decides how many heads are left after pruning
  Tensor forward(const Tensor& x, const std::vector<int64_t>& lengths = {},
                 KVCache* cache = nullptr);
  // The block's hook points (hooks.hpp), or null; owned by the GPT.
  void set_hooks(const LayerHooks* hooks);

  std::shared_ptr<LayerNorm> ln_1;
  std::shared_ptr<MultiHeadSelfAttention> attn;
  std::shared_ptr<LayerNorm> ln_2;
  std::shared_ptr<MLP> mlp;

 private:
  Tensor hook(HookPoint point, const Tensor& value) const {
    return hooks_ != nullptr ? hooks_->run(point, value) : value;
  }
  const LayerHooks* hooks_ = nullptr;
};

// The body: embeddings, blocks, final LayerNorm.
class Transformer : public Module {
 public:
  Transformer(const GPTConfig& config, Generator& init, std::shared_ptr<Generator> noise);

  std::shared_ptr<Embedding> wte;  // (V,C)
  std::shared_ptr<Embedding> wpe;  // (T,C), null unless the positions are learned
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<ModuleList<Block>> h;
  std::shared_ptr<LayerNorm> ln_f;
};

// An untied output projection stored (V,C), as Hugging Face stores lm_head.weight.
class LMHead : public Module {
 public:
  LMHead(int64_t dim, int64_t vocab_size);
  Tensor weight;  // (V,C)
};

// config.json of a GPT claims GPT-2 (model_type "gpt2", GPT2LMHeadModel) only where Hugging
// Face's GPT-2 computes the same logits from it: learned positions and as many key/value heads as
// heads. Every other variant (RoPE, ALiBi, sinusoidal or no positions, grouped-query attention, unscaled scores) is
// model_type "tinygpt", TinyGPTForCausalLM: GPT-2's keys and tensor names plus
// position_embedding_type, rope_theta and num_key_value_heads, which GPT-2 would ignore.
inline constexpr const char* kGpt2ModelType = "gpt2";
inline constexpr const char* kGpt2Architecture = "GPT2LMHeadModel";
inline constexpr const char* kTinyGptModelType = "tinygpt";
inline constexpr const char* kTinyGptArchitecture = "TinyGPTForCausalLM";
bool loads_as_gpt2(const GPTConfig& config);
// config.json's text. `training_precision` ("f32", "bf16"; "" for none) is recorded as
// tinygpt_training_precision: the weights themselves are always f32 (torch_dtype).
std::string gpt_config_json(const GPTConfig& config, const std::string& training_precision = "");

class GPT : public CausalLM {
 public:
  // Weights initialised as GPT-2: N(0, 0.02), residual projections N(0, 0.02/sqrt(2 n_layer)),
  // biases 0, LayerNorm 1/0. `seed` also seeds the dropout generator.
  GPT(const GPTConfig& config, uint64_t seed);

  // tokens (B,T) i64 -> logits (B,T,V). `lengths` masks padded keys per sequence; with `cache`
  // (one KVCache per layer), tokens continue the cached positions. Only learned positions limit
  // the length to block_size; the other schemes run on any length.
  Tensor forward(const Tensor& tokens, const std::vector<int64_t>& lengths = {},
                 std::vector<KVCache>* cache = nullptr);
  // forward's logits of the last position only, (B,1,V): all that generation samples from. A
  // prompt's other positions skip the LM head, whose product over the whole vocabulary is the
  // largest of the forward.
  Tensor next_logits(const Tensor& tokens, std::vector<KVCache>* cache = nullptr);
  // CausalLM: logits are forward(tokens); the loss is the base's cross-entropy.
  Tensor logits(const Tensor& tokens) override { return forward(tokens); }
  CausalLMShape shape() const override;
  Generator& dropout_generator() override { return *noise_; }
  // Attention weights (B,H,T,Tk) of the last forward, one per layer; needs
  // set_keep_attention_weights(true) before that forward (training leaves it off: memory).
  std::vector<Tensor> attention_weights() const override;
  void set_keep_attention_weights(bool keep) override;
  std::string config_json() const override;  // gpt_config_json(config())

  const GPTConfig& config() const { return config_; }
  // Generation in bf16: every weight matrix (the blocks' Linears and the LM head) rounded to bf16
  // once and kept beside the f32 parameters; a forward of one position (next_logits on a warm KV
  // cache) then reads those, half the bytes. Precision::f32 drops them. The copies are taken now,
  // so weights changed afterwards (training, loading) need another call.
  void set_generation_precision(Precision precision);
  Precision generation_precision() const { return head_bf16_ != nullptr ? Precision::bf16 : Precision::f32; }
  // One KVCache per layer: a ring of W + G slots for a sliding window, linear attention's
  // running sums for linear attention, else one that grows.
  std::vector<KVCache> make_cache() const;
  // Whether generation may run past the context with one cache, in constant memory: a sliding
  // window with positions that need no table (RoPE, ALiBi, none), linear attention with no
  // positions. Other models restart their cache from the last half context when it fills.
  bool generates_past_context() const;
  // Key/value positions the cache holds after `positions` of text: the ring's slots, up to the
  // context, or none (linear attention keeps recurrent_state_bytes instead).
  int64_t kv_cache_positions(int64_t positions) const;
  // Bytes of linear attention's f32 running sums, layers x kv_heads x (d^2 + d) x 4 (0 for
  // softmax attention).
  int64_t recurrent_state_bytes() const;
  // Bytes of f32 keys and values the cache holds at `length` positions, batch 1:
  // 2 x layers x kv_heads x length x head width x 4.
  int64_t kv_cache_bytes(int64_t length) const;

  // Hook points (hooks.hpp): add_hook registers `hook` at a point named "blocks.{L}.{point}"
  // (ValueError listing the valid names otherwise) and returns an id for remove_hook.
  HookId add_hook(const std::string& name, Hook hook);
  bool remove_hook(HookId id);  // false when no hook has that id
  // Every hook point's name, layer by layer in forward order.
  std::vector<std::string> hook_names() const;
  // forward(tokens) recording the activations whose names pass `filter` (all when empty),
  // detached, next to the logits. Hooks already registered run first, so the cache holds the
  // values the forward actually continued with.
  ActivationCache run_with_cache(const Tensor& tokens, const HookFilter& filter = {});

  std::shared_ptr<Transformer> transformer;
  std::shared_ptr<LMHead> lm_head;  // null when tied

 private:
  // Token embeddings plus the positions' (learned or sinusoidal) of tokens (B,T) at past..: (B,T,C).
  Tensor embed(const Tensor& tokens, int64_t past);
  // The blocks' output after ln_f, (B,T,C), and the LM head's product of it, (B,T,V).
  Tensor hidden(const Tensor& tokens, const std::vector<int64_t>& lengths, std::vector<KVCache>* cache);
  Tensor head(const Tensor& x) const;

  GPTConfig config_;
  std::shared_ptr<const Bf16Weight> head_bf16_;  // the LM head's weight in bf16, or null
  std::shared_ptr<Generator> noise_;
  std::vector<std::unique_ptr<LayerHooks>> hooks_;  // one per block; blocks point into them
  HookId next_hook_id_ = 0;
};

// Hooks added for a scope and removed when it ends, an exception included:
//   ScopedHooks ablate(model);
//   ablate.add("blocks.1.attn.z", [](const Tensor& z) { return z * head_mask; });
class ScopedHooks {
 public:
  explicit ScopedHooks(GPT& model) : model_(model) {}
  ~ScopedHooks() {
    for (HookId id : ids_) model_.remove_hook(id);
  }
  ScopedHooks(const ScopedHooks&) = delete;
  ScopedHooks& operator=(const ScopedHooks&) = delete;
  void add(const std::string& name, Hook hook) { ids_.push_back(model_.add_hook(name, std::move(hook))); }

 private:
  GPT& model_;
  std::vector<HookId> ids_;
};

}  // namespace tinygpt::nn
