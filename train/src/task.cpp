#include "tinygpt/train/task.hpp"

#include <cmath>
#include <map>
#include <mutex>

#include "tinygpt/data/bpe.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/progress.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::train {
namespace {

// The registered model types; guarded, as a program may register from several threads.
struct Registry {
  std::mutex mutex;
  std::map<std::string, CausalLMFactory> factories;
};

Registry& registry() {
  static Registry r;
  return r;
}

std::optional<CausalLMFactory> factory_of(const std::string& model_type) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.factories.find(model_type);
  if (it == r.factories.end()) return std::nullopt;
  return it->second;
}

// config.json's text with the run's training precision recorded beside the model's own keys.
std::string with_precision(const std::string& config_json, const std::string& training_precision) {
  if (training_precision.empty()) return config_json;
  nlohmann::json j = nlohmann::json::parse(config_json);
  j["tinygpt_training_precision"] = training_precision;
  return j.dump(2) + "\n";
}

// Before the data and model are allocated: a step that cannot fit is refused by its size.
template <class Config>
void check_step_memory(const Config& config, const TaskSource& source) {
  check_memory(estimate_training_memory(config, source.micro_batch_rows, source.options.optimizer,
                                        source.options.momentum));
}

std::unique_ptr<data::TextDataset> text_dataset(const TaskSource& source,
                                                const data::Tokenizer& tokenizer,
                                                int64_t block_size) {
  return std::make_unique<data::TextDataset>(data::make_dataset(
      source.text, source.data_source, tokenizer, block_size, source.val_fraction));
}

std::unique_ptr<data::PairDataset> pair_dataset(const TaskSource& source,
                                                const data::Tokenizer& tokenizer,
                                                int64_t max_positions) {
  return std::make_unique<data::PairDataset>(data::parse_pairs(source.text, source.data_source),
                                             tokenizer, max_positions, source.val_fraction,
                                             source.data_source);
}

std::unique_ptr<Task> gpt_task(nn::GPTConfig config, const TaskSource& source,
                               data::TokenizerPtr tokenizer) {
  config.vocab_size = tokenizer->vocab_size();
  config.validate();
  check_step_memory(config, source);
  auto dataset = text_dataset(source, *tokenizer, config.block_size);
  return std::make_unique<LanguageModelTask>(
      std::make_unique<nn::GPT>(config, source.options.seed), std::move(tokenizer), std::move(dataset));
}

std::unique_ptr<Task> pair_task(nn::EncoderDecoderConfig config, const TaskSource& source) {
  auto tokenizer = std::make_shared<const data::CharTokenizer>(
      data::fit_pair_tokenizer(data::parse_pairs(source.text, source.data_source)));
  config.vocab_size = tokenizer->vocab_size();
  config.pad_token_id = data::kPadId;
  config.bos_token_id = config.decoder_start_token_id = data::kBosId;
  config.eos_token_id = data::kEosId;
  config.validate();
  check_step_memory(config, source);
  auto pairs = pair_dataset(source, *tokenizer, config.max_position_embeddings);
  return std::make_unique<PairTask>(std::make_unique<nn::EncoderDecoder>(config, source.options.seed),
                                    std::move(tokenizer), std::move(pairs));
}

// A registered type's model: its memory is its own, so only its context is read off it.
std::unique_ptr<Task> own_task(nlohmann::json config, const TaskSource& source,
                               data::TokenizerPtr tokenizer) {
  config["vocab_size"] = tokenizer->vocab_size();
  std::unique_ptr<nn::CausalLM> model = build_registered(config, source.options.seed);
  auto dataset = text_dataset(source, *tokenizer, model->shape().block_size);
  return std::make_unique<LanguageModelTask>(std::move(model), std::move(tokenizer), std::move(dataset));
}

}  // namespace

void Task::throw_not_a(const char* wanted) const {
  throw OptionError(fmt::format("the run's model is {} ({}), not {}", kind(),
                                is<PairTask>() ? PairTask::kKindName : LanguageModelTask::kKindName,
                                wanted));
}

LanguageModelTask::LanguageModelTask(std::unique_ptr<nn::CausalLM> model,
                                     data::TokenizerPtr tokenizer,
                                     std::unique_ptr<data::TextDataset> dataset)
    : Task(std::move(tokenizer)), model_(std::move(model)), dataset_(std::move(dataset)) {}

std::string LanguageModelTask::kind() const {
  if (gpt() != nullptr) return "gpt";
  return nlohmann::json::parse(model_->config_json()).value("model_type", "causal-lm");
}

std::unique_ptr<Objective> LanguageModelTask::make_objective() {
  return std::make_unique<LanguageModelObjective>(*model_, *dataset_);
}

std::string LanguageModelTask::config_json(const std::string& training_precision) const {
  return with_precision(model_->config_json(), training_precision);
}

std::string LanguageModelTask::describe() const {
  const std::string sizes = fmt::format("vocabulary {}, {} training tokens", tokenizer_->vocab_size(),
                                        dataset_->size(data::Split::train));
  if (const nn::GPT* g = gpt()) {
    const nn::GPTConfig& c = g->config();
    return fmt::format(
        "{} parameters ({}, {}, {} key/value heads, d_model {}, context {}, {} positions{}), {}",
        g->num_parameters(), count_of(c.n_layer, "layer"), count_of(c.n_head, "head"), c.kv_heads(),
        c.n_embd, c.block_size, nn::position_embedding_name(c.position_embedding),
        c.attention.is_full() ? "" : ", " + c.attention.str() + " attention", sizes);
  }
  const nn::CausalLMShape s = model_->shape();
  return fmt::format("{} parameters ({}, {}, {}, context {}), {}", model_->num_parameters(), kind(),
                     count_of(s.n_layer, "layer"), count_of(s.n_head, "head"), s.block_size, sizes);
}

std::string LanguageModelTask::shape_title() const {
  const nn::CausalLMShape s = model_->shape();
  const std::string layers = count_of(s.n_layer, "layer");
  if (gpt() == nullptr) return fmt::format("{}, {}", kind(), layers);
  return fmt::format("{}, d_model {}", layers, gpt()->config().n_embd);
}

std::optional<MemoryEstimate> LanguageModelTask::training_memory(int64_t micro_batch_rows,
                                                                 const TrainOptions& options) const {
  if (const nn::GPT* g = gpt()) {
    return estimate_training_memory(g->config(), micro_batch_rows, options.optimizer, options.momentum);
  }
  return std::nullopt;
}

PairTask::PairTask(std::unique_ptr<nn::EncoderDecoder> model, data::TokenizerPtr tokenizer,
                   std::unique_ptr<data::PairDataset> pairs)
    : Task(std::move(tokenizer)), model_(std::move(model)), pairs_(std::move(pairs)) {}

std::unique_ptr<Objective> PairTask::make_objective() {
  return std::make_unique<PairObjective>(*model_, *pairs_);
}

std::string PairTask::config_json(const std::string& training_precision) const {
  return config_to_json(model_->config(), training_precision);
}

namespace {

// How the decoder sees the source, said where it is not the Transformer's dot-product
// cross-attention.
std::string cross_phrase(const nn::EncoderDecoderConfig& c) {
  if (!c.cross_attention) return ", no cross-attention";
  if (c.cross_score == nn::AttentionScore::dot) return "";
  return fmt::format(", {} cross-attention", nn::attention_score_name(c.cross_score));
}

}  // namespace

std::string PairTask::describe() const {
  const nn::EncoderDecoderConfig& c = model_->config();
  return fmt::format("{} parameters (encoder-decoder, {} + {} layers, {}, d_model {}, {} "
                     "positions{}), vocabulary {}, {} training pairs, {} held out",
                     model_->num_parameters(), c.encoder_layers, c.decoder_layers,
                     count_of(c.encoder_attention_heads, "head"), c.d_model,
                     c.max_position_embeddings, cross_phrase(c), tokenizer_->vocab_size(),
                     pairs_->size(data::Split::train), pairs_->size(data::Split::val));
}

std::string PairTask::shape_title() const {
  const nn::EncoderDecoderConfig& c = model_->config();
  return fmt::format("encoder-decoder, {} + {} layers, d_model {}{}", c.encoder_layers, c.decoder_layers,
                     c.d_model, cross_phrase(c));
}

std::optional<MemoryEstimate> PairTask::training_memory(int64_t micro_batch_rows,
                                                        const TrainOptions& options) const {
  return estimate_training_memory(model_->config(), micro_batch_rows, options.optimizer, options.momentum);
}

void register_causal_lm(const std::string& model_type, CausalLMFactory factory) {
  for (const char* own : {kGpt2ModelType, kTinyGptModelType, kEncoderDecoderModelType}) {
    if (model_type == own) {
      throw ValueError(fmt::format("register_causal_lm: model_type \"{}\" is tinygpt's own", model_type));
    }
  }
  if (model_type.empty() || !factory) {
    throw ValueError("register_causal_lm: needs a model_type and a factory");
  }
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[model_type] = std::move(factory);
}

ModelFamily family_of(const nlohmann::json& config, const std::string& source) {
  const auto it = config.is_object() ? config.find("model_type") : config.end();
  // A config.json without one is GPT-2's (older Hugging Face files); its reader says the rest.
  if (it == config.end()) return ModelFamily::gpt;
  const std::string type = it->is_string() ? it->get<std::string>() : it->dump();
  if (type == kGpt2ModelType || type == kTinyGptModelType) return ModelFamily::gpt;
  if (type == kEncoderDecoderModelType) return ModelFamily::encoder_decoder;
  if (factory_of(type)) return ModelFamily::registered;
  throw ValueError(fmt::format(
      "{}: model_type \"{}\" is not one this program knows (\"{}\", \"{}\", \"{}\", or a type "
      "registered with train::register_causal_lm)",
      source, type, kGpt2ModelType, kTinyGptModelType, kEncoderDecoderModelType));
}

std::unique_ptr<nn::CausalLM> build_registered(const nlohmann::json& config, uint64_t seed) {
  const std::string type = config.at("model_type").get<std::string>();
  const std::optional<CausalLMFactory> factory = factory_of(type);
  if (!factory) throw ValueError(fmt::format("model_type \"{}\" is not registered", type));
  std::unique_ptr<nn::CausalLM> model = (*factory)(config, seed);
  if (!model) throw ValueError(fmt::format("the factory of model_type \"{}\" built no model", type));
  return model;
}

data::TokenizerPtr chosen_tokenizer(const TokenizerChoice& choice, std::string_view text,
                                    double val_fraction) {
  if (choice.given) return choice.given;
  if (choice.bpe_vocab_size == 0) return nullptr;
  const auto held_out = static_cast<size_t>(std::llround(static_cast<double>(text.size()) * val_fraction));
  return std::make_shared<const data::BpeTokenizer>(
      data::train_bpe(text.substr(0, text.size() - held_out), choice.bpe_vocab_size));
}

void check_same_tokenizer(const data::Tokenizer& kept, const data::Tokenizer& asked,
                          const std::string& dir) {
  if (data::same_tokenizer(kept, asked)) return;
  throw OptionError(std::vector<MessagePart>{
      named("tokenizer", fmt::format("of {} tokens", asked.vocab_size())),
      fmt::format(" is not the one {} keeps ({} tokens); drop it to use the run's own", dir,
                  kept.vocab_size())});
}

std::unique_ptr<Task> new_task(const ModelConfig& config, const TaskSource& source,
                               data::TokenizerPtr tokenizer) {
  const auto fitted = [&]() -> data::TokenizerPtr {
    if (tokenizer) return std::move(tokenizer);
    return std::make_shared<const data::CharTokenizer>(data::CharTokenizer::fit(source.text));
  };
  if (const auto* gpt = std::get_if<nn::GPTConfig>(&config)) return gpt_task(*gpt, source, fitted());
  if (const auto* pairs = std::get_if<nn::EncoderDecoderConfig>(&config)) return pair_task(*pairs, source);
  const nlohmann::json& j = std::get<nlohmann::json>(config);
  const char* where = "the model config";
  switch (family_of(j, where)) {
    case ModelFamily::gpt: {
      data::TokenizerPtr t = fitted();
      nlohmann::json sized = j;
      sized["vocab_size"] = t->vocab_size();
      return gpt_task(config_from_json(sized.dump(), where), source, std::move(t));
    }
    case ModelFamily::encoder_decoder: {
      nlohmann::json sized = j;
      sized["vocab_size"] = 1;  // set from the pairs' tokenizer by pair_task
      return pair_task(encoder_decoder_config_from_json(sized.dump(), where), source);
    }
    case ModelFamily::registered: break;
  }
  return own_task(j, source, fitted());
}

std::unique_ptr<Task> saved_task(LoadedModel&& loaded, const TaskSource& source) {
  if (loaded.seq2seq) {
    check_step_memory(loaded.seq2seq_config, source);
    auto pairs = pair_dataset(source, *loaded.tokenizer, loaded.seq2seq_config.max_position_embeddings);
    return std::make_unique<PairTask>(std::move(loaded.seq2seq), std::move(loaded.tokenizer),
                                      std::move(pairs));
  }
  if (loaded.model) check_step_memory(loaded.config, source);
  std::unique_ptr<nn::CausalLM> model =
      loaded.model ? std::move(loaded.model) : std::move(loaded.own_model);
  auto dataset = text_dataset(source, *loaded.tokenizer, model->shape().block_size);
  return std::make_unique<LanguageModelTask>(std::move(model), std::move(loaded.tokenizer),
                                             std::move(dataset));
}

}  // namespace tinygpt::train
