#include "tinygpt/train/task.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "tinygpt/data/bpe.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/utf8.hpp"
#include "json_fields.hpp"
#include "tinygpt/train/bert_files.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/flop_estimate.hpp"
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
void check_new_model_memory(const Config& config, const TaskSource& source) {
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
  check_new_model_memory(config, source);
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
  check_new_model_memory(config, source);
  auto pairs = pair_dataset(source, *tokenizer, config.max_position_embeddings);
  return std::make_unique<PairTask>(std::make_unique<nn::EncoderDecoder>(config, source.options.seed),
                                    std::move(tokenizer), std::move(pairs));
}

// An encoder's run: a masked-LM tokenizer fitted on the text (its characters after the specials)
// unless one is given, the text in windows of the context less [CLS] and [SEP].
std::unique_ptr<Task> encoder_task(EncoderConfig config, const TaskSource& source,
                                   std::shared_ptr<const data::MaskedLMTokenizer> tokenizer = nullptr) {
  if (!tokenizer) tokenizer = std::make_shared<const data::MaskedLMTokenizer>(data::MaskedLMTokenizer::fit(source.text));
  config.model.vocab_size = tokenizer->vocab_size();
  config.model.pad_token_id = data::MaskedLMTokenizer::kPad;
  config.model.validate();
  check_new_model_memory(config.model, source);
  auto task = std::make_unique<EncoderTask>(std::make_unique<nn::BertForMaskedLM>(config.model, source.options.seed),
                                            std::move(tokenizer), config.mask_probability, nullptr);
  task->set_data(source);
  return task;
}

// A registered type's model: its memory is measured on the model, so checked once it is built.
std::unique_ptr<Task> own_task(nlohmann::json config, const TaskSource& source,
                               data::TokenizerPtr tokenizer) {
  config["vocab_size"] = tokenizer->vocab_size();
  auto task = std::make_unique<LanguageModelTask>(build_registered(config, source.options.seed),
                                                  std::move(tokenizer), nullptr);
  task->set_data(source);
  return task;
}

}  // namespace

void Task::throw_not_a(const char* wanted) const {
  throw OptionError(fmt::format("the run's model is {} ({}), not {}", kind(),
                                kind_phrase(),
                                wanted));
}

void Task::throw_no_data() const {
  throw ValueError(Operation("Task"), fmt::format("the {} task has no data yet (Task::set_data)", kind()));
}

void Task::check_step_memory(const TaskSource& source) const {
  if (const auto estimate = training_memory(source.micro_batch_rows, source.options)) check_memory(*estimate);
}

LanguageModelTask::LanguageModelTask(std::unique_ptr<nn::CausalLM> model,
                                     data::TokenizerPtr tokenizer,
                                     std::unique_ptr<data::TextDataset> dataset)
    : Task(std::move(tokenizer)), model_(std::move(model)), dataset_(std::move(dataset)) {}

std::string LanguageModelTask::kind() const {
  if (gpt() != nullptr) return "gpt";
  return nlohmann::json::parse(model_->config_json()).value("model_type", "causal-lm");
}

void LanguageModelTask::set_data(const TaskSource& source) {
  check_step_memory(source);
  dataset_ = text_dataset(source, *tokenizer_, model_->shape().block_size);
}

std::unique_ptr<Objective> LanguageModelTask::make_objective() {
  return std::make_unique<LanguageModelObjective>(*model_, dataset());
}

std::string LanguageModelTask::config_json(const std::string& training_precision) const {
  return with_precision(model_->config_json(), training_precision);
}

std::string LanguageModelTask::describe() const {
  const std::string sizes = fmt::format("vocabulary {}, {} training tokens", tokenizer_->vocab_size(),
                                        dataset().size(data::Split::train));
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
  return measure_training_memory(*model_, micro_batch_rows, options.optimizer, options.momentum);
}

StepShape LanguageModelTask::step_shape(int64_t batch, const std::string& data_name) const {
  StepShape s;
  const nn::GPT* g = gpt();
  if (g == nullptr) {
    const nn::CausalLMShape m = model_->shape();
    s.positions_per_row = m.block_size;
    s.config = {{"model_type", kind()}, {"layers", m.n_layer}, {"heads", m.n_head},
                {"block", m.block_size}, {"batch", batch}, {"vocab", m.vocab_size}};
    s.title = fmt::format("{}, {}, {}, context {}, batch {}, vocab {} ({})", kind(),
                          count_of(m.n_layer, "layer"), count_of(m.n_head, "head"), m.block_size,
                          batch, m.vocab_size, data_name);
    return s;
  }
  const nn::GPTConfig& c = g->config();
  const std::string pos = nn::position_embedding_name(c.position_embedding);
  s.positions_per_row = c.block_size;
  s.config = {{"layers", c.n_layer}, {"heads", c.n_head}, {"kv_heads", c.kv_heads()},
              {"pos", pos}, {"d_model", c.n_embd}, {"block", c.block_size}, {"batch", batch},
              {"vocab", c.vocab_size}, {"attention", c.attention.str()}};
  s.title = fmt::format("{}, {} ({} key/value), d_model {}, context {}, {} positions, batch {}, "
                        "vocab {} ({})", count_of(c.n_layer, "layer"), count_of(c.n_head, "head"),
                        c.kv_heads(), c.n_embd, c.block_size, pos, batch, c.vocab_size, data_name);
  s.flops = StepShape::Flops{training_flops_per_token(c), matmul_parameter_count(c)};
  s.inference = StepShape::InferenceState{c.block_size, g->kv_cache_bytes(g->kv_cache_positions(c.block_size)),
                                          g->kv_cache_bytes(c.block_size), g->recurrent_state_bytes()};
  return s;
}

PairTask::PairTask(std::unique_ptr<nn::EncoderDecoder> model, data::TokenizerPtr tokenizer,
                   std::unique_ptr<data::PairDataset> pairs)
    : Task(std::move(tokenizer)), model_(std::move(model)), pairs_(std::move(pairs)) {}

void PairTask::set_data(const TaskSource& source) {
  check_step_memory(source);
  pairs_ = pair_dataset(source, *tokenizer_, model_->config().max_position_embeddings);
}

std::unique_ptr<Objective> PairTask::make_objective() {
  return std::make_unique<PairObjective>(*model_, pairs());
}

std::string PairTask::config_json(const std::string& training_precision) const {
  return config_to_json(model_->config(), training_precision);
}

namespace {

// How the encoder attends and the decoder sees the source, said where it is not the
// Transformer's full self-attention and dot-product cross-attention.
std::string cross_phrase(const nn::EncoderDecoderConfig& c) {
  const std::string encoder =
      c.encoder_attention.is_full() ? "" : fmt::format(", encoder {}", c.encoder_pattern().str());
  if (!c.cross_attention) return encoder + ", no cross-attention";
  if (c.cross_score == nn::AttentionScore::dot) return encoder;
  return fmt::format("{}, {} cross-attention", encoder, nn::attention_score_name(c.cross_score));
}

}  // namespace

std::string PairTask::describe() const {
  const nn::EncoderDecoderConfig& c = model_->config();
  return fmt::format("{} parameters (encoder-decoder, {} + {} layers, {}, d_model {}, {} "
                     "positions{}), vocabulary {}, {} training pairs, {} held out",
                     model_->num_parameters(), c.encoder_layers, c.decoder_layers,
                     count_of(c.encoder_attention_heads, "head"), c.d_model,
                     c.max_position_embeddings, cross_phrase(c), tokenizer_->vocab_size(),
                     pairs().size(data::Split::train), pairs().size(data::Split::val));
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

StepShape PairTask::step_shape(int64_t batch, const std::string&) const {
  const nn::EncoderDecoderConfig& c = model_->config();
  int64_t source = 0, target = 0;  // the longest training pair's (the target with its start token)
  const data::PairDataset& data = pairs();
  for (int64_t i = 0; i < data.size(data::Split::train); ++i) {
    source = std::max(source, static_cast<int64_t>(data.source(data::Split::train, i).size()));
    target = std::max(target, static_cast<int64_t>(data.target(data::Split::train, i).size()) + 1);
  }
  StepShape s;
  s.positions_per_row = source + target;
  s.config = {{"arch", kind()}, {"layers", c.encoder_layers}, {"heads", c.encoder_attention_heads},
              {"d_model", c.d_model}, {"ffn_dim", c.encoder_ffn_dim}, {"source_length", source},
              {"target_length", target}, {"batch", batch}, {"vocab", c.vocab_size}};
  s.title = fmt::format("encoder-decoder, {} + {} layers, {}, d_model {}, feed-forward {}, batch {} "
                        "of {} source and {} target positions, vocab {}", c.encoder_layers,
                        c.decoder_layers, count_of(c.encoder_attention_heads, "head"), c.d_model,
                        c.encoder_ffn_dim, batch, source, target, c.vocab_size);
  return s;
}

EncoderTask::EncoderTask(std::unique_ptr<nn::BertForMaskedLM> model,
                         std::shared_ptr<const data::MaskedLMTokenizer> tokenizer,
                         double mask_probability, std::unique_ptr<data::TextDataset> dataset)
    : Task(tokenizer), model_(std::move(model)), masked_lm_tokenizer_(std::move(tokenizer)),
      mask_probability_(mask_probability), dataset_(std::move(dataset)) {}

nn::NamedTensors EncoderTask::checkpoint_tensors() { return to_hugging_face_bert(*model_); }

data::Masking EncoderTask::masking() const {
  data::Masking m;
  m.probability = mask_probability_;
  m.vocab_size = model_->config().vocab_size;
  return m;
}

void EncoderTask::set_data(const TaskSource& source) {
  check_step_memory(source);
  dataset_ = text_dataset(source, *tokenizer_, window());
}

std::unique_ptr<Objective> EncoderTask::make_objective() {
  return std::make_unique<MaskedLMObjective>(*model_, dataset(), masking());
}

std::string EncoderTask::config_json(const std::string& training_precision) const {
  return encoder_config_to_json(EncoderConfig{model_->config(), mask_probability_}, training_precision);
}

std::string EncoderTask::describe() const {
  const nn::BertConfig& c = model_->config();
  return fmt::format("{} parameters (encoder, {}, {}, d_model {}, context {}, {} positions, {}), "
                     "masking {:g} of positions, vocabulary {}, {} training tokens",
                     model_->num_parameters(), count_of(c.num_hidden_layers, "layer"),
                     count_of(c.num_attention_heads, "head"), c.hidden_size, window(),
                     nn::position_embedding_name(c.position), c.pre_layer_norm ? "pre-LN" : "post-LN",
                     mask_probability_, tokenizer_->vocab_size(), dataset().size(data::Split::train));
}

std::string EncoderTask::shape_title() const {
  const nn::BertConfig& c = model_->config();
  return fmt::format("encoder, {}, d_model {}", count_of(c.num_hidden_layers, "layer"), c.hidden_size);
}

std::optional<MemoryEstimate> EncoderTask::training_memory(int64_t micro_batch_rows,
                                                           const TrainOptions& options) const {
  return estimate_training_memory(model_->config(), micro_batch_rows, options.optimizer, options.momentum);
}

StepShape EncoderTask::step_shape(int64_t batch, const std::string& data_name) const {
  const nn::BertConfig& c = model_->config();
  StepShape s;
  s.positions_per_row = c.max_position_embeddings;
  s.config = {{"arch", kind()}, {"layers", c.num_hidden_layers}, {"heads", c.num_attention_heads},
              {"d_model", c.hidden_size}, {"ffn_dim", c.intermediate_size},
              {"block", c.max_position_embeddings}, {"batch", batch}, {"vocab", c.vocab_size},
              {"pos", nn::position_embedding_name(c.position)}, {"pre_ln", c.pre_layer_norm}};
  s.title = fmt::format("encoder, {}, {}, d_model {}, feed-forward {}, {} positions ([CLS] and [SEP] "
                        "included), batch {}, vocab {} ({})", count_of(c.num_hidden_layers, "layer"),
                        count_of(c.num_attention_heads, "head"), c.hidden_size, c.intermediate_size,
                        c.max_position_embeddings, batch, c.vocab_size, data_name);
  return s;
}

namespace {

constexpr const char* kMaskProbabilityKey = "tinygpt_mask_probability";
constexpr const char* kTrainingPrecisionKey = "tinygpt_training_precision";

}  // namespace

std::string encoder_config_to_json(const EncoderConfig& config, const std::string& training_precision) {
  nlohmann::json j = nlohmann::json::parse(bert_config_to_json(config.model));
  j[kMaskProbabilityKey] = config.mask_probability;
  return with_precision(j.dump(2) + "\n", training_precision);
}

EncoderConfig encoder_config_from_json(const std::string& text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EncoderConfig out;
  if (j.is_object()) {  // tinygpt's keys beside BERT's: the reader of BERT's refuses keys it does not know
    if (j.contains(kMaskProbabilityKey)) {
      const double p = json_fields::number(j[kMaskProbabilityKey], kMaskProbabilityKey, source);
      if (!(p > 0.0 && p <= 1.0)) {
        json_fields::fail(source, "{} must be a number in (0, 1], got {}", kMaskProbabilityKey,
                          json_fields::shown(j[kMaskProbabilityKey]));
      }
      out.mask_probability = p;
    }
    j.erase(kMaskProbabilityKey);
    j.erase(kTrainingPrecisionKey);
  }
  out.model = bert_config_from_json(j.is_object() ? j.dump() : text, source);
  return out;
}

void register_causal_lm(const std::string& model_type, CausalLMFactory factory) {
  for (const char* own : {kGpt2ModelType, kTinyGptModelType, kEncoderDecoderModelType,
                          kBertModelType, kTinyGptEncoderModelType}) {
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
  if (type == kBertModelType || type == kTinyGptEncoderModelType) return ModelFamily::encoder;
  if (factory_of(type)) return ModelFamily::registered;
  throw ValueError(fmt::format(
      "{}: model_type \"{}\" is not one this program knows (\"{}\", \"{}\", \"{}\", \"{}\", \"{}\", "
      "or a type registered with train::register_causal_lm)",
      source, type, kGpt2ModelType, kTinyGptModelType, kEncoderDecoderModelType, kBertModelType,
      kTinyGptEncoderModelType));
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
  if (const auto* encoder = std::get_if<EncoderConfig>(&config)) {
    // A fine-tuned encoder keeps its checkpoint's masked-LM tokenizer; no other is taken.
    auto masked_lm = std::dynamic_pointer_cast<const data::MaskedLMTokenizer>(tokenizer);
    if (tokenizer && !masked_lm) {
      throw OptionError("an encoder's vocabulary is its text's characters and BERT's specials; it takes no other tokenizer");
    }
    return encoder_task(*encoder, source, std::move(masked_lm));
  }
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
    case ModelFamily::encoder: {
      nlohmann::json sized = j;
      sized["vocab_size"] = 1;  // set from the text's tokenizer by encoder_task
      return encoder_task(encoder_config_from_json(sized.dump(), where), source);
    }
    case ModelFamily::registered: break;
  }
  return own_task(j, source, fitted());
}

namespace {

// `vocab` uniformly random ids, enough for train and val windows of any context; the tokenizer
// names the first of them that are Unicode scalar values (a vocabulary beyond them is only ids).
std::unique_ptr<Task> random_gpt_task(nn::GPTConfig config, int64_t vocab, const TrainOptions& options) {
  config.vocab_size = vocab;
  config.validate();
  check_memory(estimate_training_memory(config, options.batch, options.optimizer, options.momentum));
  Generator gen(options.seed);
  std::vector<int64_t> ids(static_cast<size_t>(
      std::max<int64_t>(int64_t{1} << 17, 20 * (config.block_size + 1))));
  for (auto& id : ids) id = gen.randint(vocab);
  auto dataset = std::make_unique<data::TextDataset>(std::move(ids), config.block_size, 0.1);
  std::vector<char32_t> characters;
  for (char32_t c = 0; static_cast<int64_t>(characters.size()) < vocab && c <= 0x10FFFF; ++c) {
    if (c < 0xD800 || c > 0xDFFF) characters.push_back(c);  // surrogates are no characters
  }
  return std::make_unique<LanguageModelTask>(std::make_unique<nn::GPT>(config, options.seed),
                                             std::make_shared<const data::CharTokenizer>(std::move(characters)),
                                             std::move(dataset));
}

// Pairs of random CJK characters (any vocabulary size up to theirs) that fill the positions: the
// source, and the target with its start or end token.
std::unique_ptr<Task> random_pair_task(nn::EncoderDecoderConfig config, int64_t vocab,
                                       const TrainOptions& options) {
  config.vocab_size = vocab + 3;  // at most: `vocab` characters and <pad>, <s>, </s>
  config.validate();
  check_memory(estimate_training_memory(config, options.batch, options.optimizer, options.momentum));
  const int64_t length = config.max_position_embeddings - 1;
  if (length < 1) {
    throw SettingError(Operation("random_task"), {named("max_position_embeddings", config.max_position_embeddings),
                                                  ": an encoder-decoder's pairs need at least 2 positions"});
  }
  Generator gen(options.seed);
  const auto random_string = [&] {
    std::u32string s(static_cast<size_t>(length), U'a');
    for (char32_t& c : s) c = 0x4E00 + static_cast<char32_t>(gen.randint(vocab));
    return data::encode_utf8(s);
  };
  std::string text;
  for (int i = 0; i < 4096; ++i) text += random_string() + '\t' + random_string() + '\n';
  const std::string name = "random pairs";
  return new_task(config, TaskSource{text, name, 0.1, options, options.batch});
}

// Random characters of `vocab` CJK code points, enough for train and val windows of any context.
std::unique_ptr<Task> random_encoder_task(const EncoderConfig& config, int64_t vocab, const TrainOptions& options) {
  Generator gen(options.seed);
  std::u32string text(static_cast<size_t>(std::max<int64_t>(int64_t{1} << 17, 20 * config.model.max_position_embeddings)), U'a');
  for (char32_t& c : text) c = 0x4E00 + static_cast<char32_t>(gen.randint(vocab));
  const std::string utf8 = data::encode_utf8(text), name = "random characters";
  return new_task(config, TaskSource{utf8, name, 0.1, options, options.batch});
}

}  // namespace

std::unique_ptr<Task> random_task(const ModelConfig& config, int64_t vocab, const TrainOptions& options) {
  if (const auto* gpt = std::get_if<nn::GPTConfig>(&config)) return random_gpt_task(*gpt, vocab, options);
  if (const auto* pairs = std::get_if<nn::EncoderDecoderConfig>(&config)) {
    return random_pair_task(*pairs, vocab, options);
  }
  if (const auto* encoder = std::get_if<EncoderConfig>(&config)) return random_encoder_task(*encoder, vocab, options);
  throw ValueError(Operation("random_task"), "takes a GPT's, an encoder-decoder's or an encoder's config");
}

}  // namespace tinygpt::train
