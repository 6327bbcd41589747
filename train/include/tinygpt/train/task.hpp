#pragma once
// A model family as a run sees it: the model, its tokenizer, its data and objective, its
// config.json and memory estimate. A Run holds one Task; the family is chosen in one place, by
// the model config a run starts with or by config.json's model_type when a folder is loaded:
//   "gpt2", "tinygpt"            LanguageModelTask with an nn::GPT
//   "tinygpt-encoder-decoder"    PairTask with an nn::EncoderDecoder
//   "bert", "tinygpt-encoder"    EncoderTask with an nn::BertForMaskedLM (masked LM)
//   a type register_causal_lm    LanguageModelTask with the user's nn::CausalLM
// A model of your own trains through the whole run once its type is registered:
//
//   train::register_causal_lm("own-llama", [](const nlohmann::json& config, uint64_t seed) {
//     return std::make_unique<OwnLlama>(OwnLlamaConfig::from_json(config), seed);
//   });
//   nlohmann::json config = {{"model_type", "own-llama"}, {"n_layer", 2}, ...};
//   Run run = Run::start("runs/own", config, options, data::kToyCorpus);  // sets vocab_size
//   fit(run, observers, stop);  // fit.hpp: checkpoints, exact resume, log.jsonl, evaluation
//   // later: Run::resume("runs/own", changes) rebuilds the model from config.json the same way
//
// The checkpoint of such a model is its state_dict() in model.safetensors, config_json() as
// config.json, and the tokenizer as for the GPT.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/masked_lm.hpp"
#include "tinygpt/data/pairs.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/nn/bert.hpp"
#include "tinygpt/nn/causal_lm.hpp"
#include "tinygpt/nn/encoder_decoder.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/train/memory_estimate.hpp"
#include "tinygpt/train/objective.hpp"
#include "tinygpt/train/trainer.hpp"

namespace tinygpt::train {

// What a benchmark of a task's training steps says about its model (bench.hpp).
struct StepShape {
  nlohmann::json config;          // the model's and the batch's shape (bench --json's "config")
  std::string title;              // the same in words
  int64_t positions_per_row = 0;  // tokens one row of a batch feeds the model (tokens/s counts them)
  // nanoGPT's model FLOPs of a training step per token, and the parameters in products: absent for
  // a family without an estimate, whose report then has no machine peak, MFU or allocator counts.
  struct Flops {
    double per_token = 0.0;
    int64_t matmul_parameters = 0;
  };
  std::optional<Flops> flops;
  // What generating the whole context keeps, batch 1: the KV cache (at most a window's ring),
  // the cache of every position, and linear attention's running sums.
  struct InferenceState {
    int64_t context = 0;
    int64_t kv_cache_bytes = 0;
    int64_t full_kv_cache_bytes = 0;
    int64_t recurrent_state_bytes = 0;
  };
  std::optional<InferenceState> inference;
};

// What building a run's task needs: its text, where it came from and its split, and the rows of
// one micro-batch (the memory of a step is checked before the model and data are allocated).
struct TaskSource {
  const std::string& text;
  const std::string& data_source;
  double val_fraction;
  const TrainOptions& options;
  int64_t micro_batch_rows;
};
class Task {
 public:
  virtual ~Task() = default;
  // What the run calls the family: "gpt", "encoder-decoder", or a registered model_type.
  virtual std::string kind() const = 0;
  // The same as a phrase for messages: "a language model", "an encoder-decoder", ...
  virtual const char* kind_phrase() const = 0;
  virtual nn::Module& model() = 0;
  // model.safetensors' tensors: the model's state_dict, under the names its family's files use.
  virtual nn::NamedTensors checkpoint_tensors() { return model().state_dict(); }
  const data::Tokenizer& tokenizer() const { return *tokenizer_; }
  // The same tokenizer, for a holder that outlives the task (a loaded model, a resumed run).
  const data::TokenizerPtr& shared_tokenizer() const { return tokenizer_; }
  // The run's data for a task loaded without it (load_task): `source.text` split as this family
  // reads it, once a training step of source.micro_batch_rows is found to fit in memory.
  virtual void set_data(const TaskSource& source) = 0;
  // The objective a Trainer optimises: this task's model on its data.
  virtual std::unique_ptr<Objective> make_objective() = 0;
  // config.json's text; `training_precision` as save_checkpoint records it ("" for none).
  virtual std::string config_json(const std::string& training_precision) const = 0;
  // The model's parameters and shape and the data's size, as one clause for a progress line.
  virtual std::string describe() const = 0;
  // The model's shape in a few words, for a picture's title ("2 layers, d_model 64").
  virtual std::string shape_title() const = 0;
  // What a training step of `micro_batch_rows` needs (memory_estimate.hpp: a formula for the
  // library's models, measured on a model of one's own); nullopt when the family cannot say.
  virtual std::optional<MemoryEstimate> training_memory(int64_t micro_batch_rows,
                                                        const TrainOptions& options) const = 0;
  // The shape of a training step of `batch` rows, as a benchmark reports it (bench.hpp);
  // `data_name` says what the rows are drawn from.
  virtual StepShape step_shape(int64_t batch, const std::string& data_name) const = 0;

  // The concrete task, for a caller that needs the family's own model or data; OptionError
  // naming both kinds when this task is another.
  template <class T>
  T& as() {
    if (T* task = dynamic_cast<T*>(this)) return *task;
    throw_not_a(T::kKindName);
  }
  template <class T>
  const T& as() const {
    return const_cast<Task*>(this)->as<T>();
  }
  template <class T>
  bool is() const {
    return dynamic_cast<const T*>(this) != nullptr;
  }

 protected:
  explicit Task(data::TokenizerPtr tokenizer) : tokenizer_(std::move(tokenizer)) {}
  [[noreturn]] void throw_not_a(const char* wanted) const;
  [[noreturn]] void throw_no_data() const;
  // Memory for a training step of `source`, checked before its data are allocated.
  void check_step_memory(const TaskSource& source) const;

  data::TokenizerPtr tokenizer_;
};

// Any nn::CausalLM on a text: the GPT, or a model of a registered type.
class LanguageModelTask : public Task {
 public:
  static constexpr const char* kKindName = "a language model";
  LanguageModelTask(std::unique_ptr<nn::CausalLM> model, data::TokenizerPtr tokenizer,
                    std::unique_ptr<data::TextDataset> dataset);
  std::string kind() const override;
  const char* kind_phrase() const override { return kKindName; }
  nn::Module& model() override { return *model_; }
  nn::CausalLM& causal_lm() { return *model_; }
  // The GPT, or null for a model of one's own (what only the GPT has: hooks, its config).
  nn::GPT* gpt() { return dynamic_cast<nn::GPT*>(model_.get()); }
  const nn::GPT* gpt() const { return dynamic_cast<const nn::GPT*>(model_.get()); }
  const data::TextDataset& dataset() const {
    if (!dataset_) throw_no_data();
    return *dataset_;
  }
  void set_data(const TaskSource& source) override;
  std::unique_ptr<Objective> make_objective() override;
  std::string config_json(const std::string& training_precision) const override;
  std::string describe() const override;
  std::string shape_title() const override;
  std::optional<MemoryEstimate> training_memory(int64_t micro_batch_rows,
                                                const TrainOptions& options) const override;
  StepShape step_shape(int64_t batch, const std::string& data_name) const override;

 private:
  std::unique_ptr<nn::CausalLM> model_;
  std::unique_ptr<data::TextDataset> dataset_;  // by pointer: the objective refers to it (null: none yet)
};

// An encoder-decoder on source<TAB>target pairs.
class PairTask : public Task {
 public:
  static constexpr const char* kKindName = "an encoder-decoder";
  PairTask(std::unique_ptr<nn::EncoderDecoder> model, data::TokenizerPtr tokenizer,
           std::unique_ptr<data::PairDataset> pairs);
  std::string kind() const override { return "encoder-decoder"; }
  const char* kind_phrase() const override { return kKindName; }
  nn::Module& model() override { return *model_; }
  nn::EncoderDecoder& encoder_decoder() { return *model_; }
  const data::PairDataset& pairs() const {
    if (!pairs_) throw_no_data();
    return *pairs_;
  }
  void set_data(const TaskSource& source) override;
  std::unique_ptr<Objective> make_objective() override;
  std::string config_json(const std::string& training_precision) const override;
  std::string describe() const override;
  std::string shape_title() const override;
  std::optional<MemoryEstimate> training_memory(int64_t micro_batch_rows,
                                                const TrainOptions& options) const override;
  StepShape step_shape(int64_t batch, const std::string& data_name) const override;

 private:
  std::unique_ptr<nn::EncoderDecoder> model_;
  std::unique_ptr<data::PairDataset> pairs_;  // null: none yet
};

// What a masked-LM run starts: the model, and the share of positions each batch masks.
struct EncoderConfig {
  nn::BertConfig model;
  double mask_probability = 0.15;
};

// A bidirectional encoder (BERT) trained as a masked LM on a text's windows, framed [CLS] ... [SEP]
// (MaskedLMObjective). Its folder is Hugging Face BertForMaskedLM's (bert_files.hpp), config.json
// also recording the mask probability (tinygpt_mask_probability) so a resumed run masks alike.
class EncoderTask : public Task {
 public:
  static constexpr const char* kKindName = "an encoder";
  EncoderTask(std::unique_ptr<nn::BertForMaskedLM> model,
              std::shared_ptr<const data::MaskedLMTokenizer> tokenizer, double mask_probability,
              std::unique_ptr<data::TextDataset> dataset);
  std::string kind() const override { return "encoder"; }
  const char* kind_phrase() const override { return kKindName; }
  nn::Module& model() override { return *model_; }
  nn::NamedTensors checkpoint_tensors() override;
  nn::BertForMaskedLM& bert() { return *model_; }
  const data::MaskedLMTokenizer& masked_lm_tokenizer() const { return *masked_lm_tokenizer_; }
  // BERT's masking of this model's vocabulary at the run's probability.
  data::Masking masking() const;
  double mask_probability() const { return mask_probability_; }
  // The characters of a window: the context less [CLS] and [SEP].
  int64_t window() const { return model_->config().max_position_embeddings - 2; }
  const data::TextDataset& dataset() const {
    if (!dataset_) throw_no_data();
    return *dataset_;
  }
  void set_data(const TaskSource& source) override;
  std::unique_ptr<Objective> make_objective() override;
  std::string config_json(const std::string& training_precision) const override;
  std::string describe() const override;
  std::string shape_title() const override;
  std::optional<MemoryEstimate> training_memory(int64_t micro_batch_rows,
                                                const TrainOptions& options) const override;
  StepShape step_shape(int64_t batch, const std::string& data_name) const override;

 private:
  std::unique_ptr<nn::BertForMaskedLM> model_;
  std::shared_ptr<const data::MaskedLMTokenizer> masked_lm_tokenizer_;
  double mask_probability_;
  std::unique_ptr<data::TextDataset> dataset_;  // null: none yet
};

// config.json's text of an encoder run <-> its EncoderConfig (bert_files.hpp's keys, and
// tinygpt_mask_probability, 0.15 when absent as in a Hugging Face file).
std::string encoder_config_to_json(const EncoderConfig& config, const std::string& training_precision);
EncoderConfig encoder_config_from_json(const std::string& text, const std::string& source);

// Builds a model of one's own from config.json's object (vocab_size set) and a seed.
using CausalLMFactory =
    std::function<std::unique_ptr<nn::CausalLM>(const nlohmann::json& config, uint64_t seed)>;
// From now on a run started with a JSON config of this model_type, and any folder whose
// config.json names it, builds its model with `factory`. ValueError for the library's own
// types (gpt2, tinygpt, tinygpt-encoder-decoder); registering a type again replaces its factory.
void register_causal_lm(const std::string& model_type, CausalLMFactory factory);

// The model a new run starts: a GPT's config, an encoder-decoder's, or a JSON object in
// config.json's keys whose "model_type" picks the family (family_of). The run sets its
// vocabulary from the tokenizer it fits.
using ModelConfig = std::variant<nn::GPTConfig, nn::EncoderDecoderConfig, EncoderConfig, nlohmann::json>;

// The family of a config.json's model_type: the one place a model type is told from another.
// `source` names where the config was read; ValueError naming the type and the known ones when
// it is none of them.
enum class ModelFamily { gpt, encoder_decoder, encoder, registered };
ModelFamily family_of(const nlohmann::json& config, const std::string& source);
// A registered type's model built from `config` by its factory (family_of said registered).
std::unique_ptr<nn::CausalLM> build_registered(const nlohmann::json& config, uint64_t seed);

// The tokenizer a new language-model run asks for: a character tokenizer fitted on its text
// (neither set), `given`, or byte-level BPE of `bpe_vocab_size` tokens trained on the run's
// training split alone (the text before its last val_fraction), so the held-out text stays unseen.
struct TokenizerChoice {
  data::TokenizerPtr given;
  int64_t bpe_vocab_size = 0;
  bool is_default() const { return given == nullptr && bpe_vocab_size == 0; }
};
// The tokenizer `choice` gives on `text` split at `val_fraction`; null for the default (the
// family fits its own).
data::TokenizerPtr chosen_tokenizer(const TokenizerChoice& choice, std::string_view text,
                                    double val_fraction);
// Refuses (OptionError naming the setting "tokenizer") a tokenizer asked for that is not
// `kept`, the one that a resumed or fine-tuned run keeps from `dir`.
void check_same_tokenizer(const data::Tokenizer& kept, const data::Tokenizer& asked,
                          const std::string& dir);

// A new run's task: the model from `config` (initialised from options.seed) with its vocabulary
// set from `tokenizer` (any kind, for a language model; a masked-LM one, a fine-tuned encoder's,
// for an encoder), or from a character tokenizer fitted on the text for its family. Every setting is checked before anything is allocated.
std::unique_ptr<Task> new_task(const ModelConfig& config, const TaskSource& source,
                               data::TokenizerPtr tokenizer = nullptr);
// A task on random data, for timing training steps (bench.hpp): a GPT's or a registered model's
// on `vocab` uniformly random token ids (its tokenizer names the first of them that are Unicode
// scalar values), an encoder-decoder's on random pairs of up to `vocab` characters whose source
// and target fill its positions. options.batch rows make a micro-batch; the model is seeded by
// options.seed. MemoryError, before the data exists, for a step the machine cannot hold.
std::unique_ptr<Task> random_task(const ModelConfig& config, int64_t vocab, const TrainOptions& options);

}  // namespace tinygpt::train
