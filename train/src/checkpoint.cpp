#include "tinygpt/train/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "finite_values.hpp"
#include "json_fields.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/skip_init.hpp"
#include "tinygpt/data/bpe.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/io/safetensors.hpp"
#include "tinygpt/train/bert_files.hpp"
#include "tinygpt/train/task.hpp"

namespace tinygpt::train {
namespace fs = std::filesystem;
using nlohmann::json;
using io::FormatError;
using io::IOError;
using io::NamedTensors;
using io::SafetensorsFile;

// TrainOptions -> JSON, field by field (trainer_state.json); read back by options_from_json.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainOptions, steps, batch, grad_accum, lr, min_lr, warmup, lr_decay_steps,
                                   weight_decay, beta1, beta2, grad_clip, optimizer, momentum,
                                   eval_every, eval_iters, seed, precision)

namespace {

namespace jf = json_fields;

constexpr int kRunStateVersion = 1;
// The bound on --steps; a larger step in a file is damage, not a run.
constexpr int64_t kMaxSteps = TrainOptions::kMaxSteps;

std::string path_in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

std::string hex_state(const Generator::State& s) {
  return fmt::format("{:016x}{:016x}{:016x}{:016x}", s[0], s[1], s[2], s[3]);
}

Generator::State parse_state(const json& value, const char* key, const std::string& source) {
  const std::string hex = jf::string(value, key, source);
  Generator::State s{};
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    jf::fail(source, "key '{}' is not a generator state (64 hex digits): '{}'", key, hex.substr(0, 70));
  }
  for (size_t i = 0; i < 4; ++i) s[i] = std::stoull(hex.substr(16 * i, 16), nullptr, 16);
  return s;
}

// Reads "options" key by key, so a wrong type or a fraction names its key; unknown keys are
// refused (a newer tinygpt's option this one would ignore).
TrainOptions options_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) jf::fail(source, "key 'options' must be an object, got {}", jf::shown(j));
  TrainOptions o;
  const auto count = [&](const char* key, int64_t min) {
    return jf::integer(jf::required(j, key, source), key, source, min, kMaxSteps);
  };
  const auto number = [&](const char* key) { return jf::number(jf::required(j, key, source), key, source); };
  o.steps = count("steps", 1);
  o.batch = count("batch", 1);
  // Runs saved before gradient accumulation existed took one micro-batch per step.
  o.grad_accum = j.contains("grad_accum") ? count("grad_accum", 1) : 1;
  o.lr = number("lr");
  o.min_lr = number("min_lr");
  o.warmup = count("warmup", 0);
  o.lr_decay_steps = count("lr_decay_steps", 0);
  o.weight_decay = number("weight_decay");
  o.beta1 = number("beta1");
  o.beta2 = number("beta2");
  o.grad_clip = number("grad_clip");
  o.optimizer = jf::string(jf::required(j, "optimizer", source), "optimizer", source);
  o.momentum = number("momentum");
  o.eval_every = count("eval_every", 1);
  o.eval_iters = count("eval_iters", 1);
  o.seed = jf::unsigned_integer(jf::required(j, "seed", source), "seed", source);
  // Runs saved before bf16 products existed ran in f32.
  if (j.contains("precision")) {
    o.precision = jf::string(j["precision"], "precision", source);
    if (!precision_from_name(o.precision)) {
      jf::fail(source, "key 'options.precision' must be \"f32\" or \"bf16\", got {}",
               jf::shown(j["precision"]));
    }
  }
  const json known = o;
  for (const auto& item : j.items()) {
    if (!known.contains(item.key())) jf::fail(source, "unknown key 'options.{}'", item.key());
  }
  return o;
}

data::TokenizerPtr tokenizer_from_json(const std::string& text, const std::string& source) {
  try {
    return data::tokenizer_from_json(text);
  } catch (const Error& e) {
    throw FormatError(source + ": ", e);
  }
}

// A folder's tokenizer: its tokenizer.json, or else GPT-2's vocab.json and merges.txt (a Hugging
// Face gpt2 folder may hold only those two).
data::TokenizerPtr read_folder_tokenizer(const io::CommittedFiles& files) {
  if (!files.contains("tokenizer.json") && files.contains("vocab.json") && files.contains("merges.txt")) {
    try {
      return std::make_shared<const data::BpeTokenizer>(
          data::BpeTokenizer::from_vocab_and_merges(files.read("vocab.json"), files.read("merges.txt")));
    } catch (const ValueError& e) {
      throw FormatError(files.path_of("vocab.json") + ", merges.txt: ", e);
    }
  }
  return tokenizer_from_json(files.read("tokenizer.json"), files.path_of("tokenizer.json"));
}

// The weights of a GPT-2 checkpoint under tinygpt's names. Hugging Face's tools write them with
// or without the "transformer." prefix (GPT2Model vs GPT2LMHeadModel), keep the causal-mask
// buffers "h.<i>.attn.bias" and "h.<i>.attn.masked_bias" (not weights: tinygpt masks by
// construction), and may store the tied lm_head.weight beside the embedding it equals.
NamedTensors gpt2_weights(const SafetensorsFile& file, const nn::GPTConfig& config) {
  const auto ends_with = [](const std::string& s, std::string_view tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  NamedTensors out;
  std::set<std::string> names;
  std::optional<Tensor> tied_head;
  for (const auto& [stored, tensor] : file.tensors) {
    if (ends_with(stored, ".attn.bias") || ends_with(stored, ".attn.masked_bias")) continue;
    if (stored == "lm_head.weight" && config.tie_weights) {
      tied_head = tensor;
      continue;
    }
    const std::string name =
        stored == "lm_head.weight" || stored.rfind("transformer.", 0) == 0 ? stored : "transformer." + stored;
    if (!names.insert(name).second) {
      throw FormatError(fmt::format("{}: tensor '{}' is stored both with and without the "
                                    "'transformer.' prefix", file.source, name));
    }
    out.emplace_back(name, tensor);
  }
  if (tied_head) {
    const auto wte = std::find_if(out.begin(), out.end(), [](const auto& named) {
      return named.first == "transformer.wte.weight";
    });
    if (wte == out.end() || wte->second.shape() != tied_head->shape() ||
        wte->second.to_vector() != tied_head->to_vector()) {
      throw FormatError(fmt::format("{}: lm_head.weight differs from wte.weight, but config.json "
                                    "says tie_word_embeddings", file.source));
    }
  }
  return out;
}

// The dimensions that set a GPT's size (vocab_size, n_positions, n_embd, n_layer) against the
// weights file, before the model is built: otherwise a damaged config.json (n_embd 20000) made
// the load allocate tens of gigabytes, and meet the OOM killer, before comparing any shape.
void check_size_dimensions(const nn::GPTConfig& config, const NamedTensors& weights,
                           const std::string& source) {
  const auto expect = [&](const std::string& name, const Shape& shape) {
    const auto it = std::find_if(weights.begin(), weights.end(),
                                 [&](const auto& named) { return named.first == name; });
    if (it == weights.end()) throw FormatError(fmt::format("{}: no tensor '{}'", source, name));
    if (it->second.shape() != shape) {
      throw FormatError(fmt::format("{}: tensor '{}' has shape {}, but config.json says {}",
                                    source, name, it->second.shape().str(), shape.str()));
    }
  };
  expect("transformer.wte.weight", Shape({config.vocab_size, config.n_embd}));
  const bool learned = config.position_embedding == nn::PositionEmbedding::learned;
  if (learned) {
    expect("transformer.wpe.weight", Shape({config.block_size, config.n_embd}));
  } else if (std::any_of(weights.begin(), weights.end(),
                         [](const auto& t) { return t.first == "transformer.wpe.weight"; })) {
    throw FormatError(fmt::format(
        "{}: has transformer.wpe.weight, but config.json says position_embedding_type \"{}\"",
        source, nn::position_embedding_name(config.position_embedding)));
  }
  std::set<std::string> layers;  // the "<i>" of every "transformer.h.<i>.<rest>"
  const std::string prefix = "transformer.h.";
  for (const auto& [name, tensor] : weights) {
    if (name.compare(0, prefix.size(), prefix) == 0) {
      layers.insert(name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size()));
    }
  }
  if (static_cast<int64_t>(layers.size()) != config.n_layer) {
    throw FormatError(fmt::format("{}: {} transformer layers, but config.json says n_layer {}",
                                  source, layers.size(), config.n_layer));
  }
}

// A NaN or an infinity in the weights (a diverged run's, or damage) gives nonsense silently.
void check_finite(const NamedTensors& weights, const std::string& source) {
  if (const std::optional<NonFinite> bad = first_non_finite(weights)) {
    throw FormatError(fmt::format("{}: tensor '{}' holds a non-finite value ({})", source, bad->name,
                                  bad->value));
  }
}

// Whether any of v[0, count) is a NaN or an infinity (all exponent bits set), tested on the bits
// without an early exit: a loop the compiler vectorises, where std::isfinite's return at the first
// hit keeps it an element at a time over a model's half gigabyte.
template <class Bits, class T>
bool any_non_finite(const T* v, int64_t count) {
  static_assert(sizeof(Bits) == sizeof(T));
  constexpr Bits kExponent = sizeof(T) == 4 ? static_cast<Bits>(0xffULL << 23) : static_cast<Bits>(0x7ffULL << 52);
  Bits found = 0;
  for (int64_t i = 0; i < count; ++i) {
    Bits bits;
    std::memcpy(&bits, v + i, sizeof bits);
    found |= static_cast<Bits>((bits & kExponent) == kExponent);
  }
  return found != 0;
}

// The first non-finite value of v[0, numel), found block by block.
template <class Bits, class T>
std::optional<double> first_non_finite_value(const T* v, int64_t numel) {
  constexpr int64_t kBlock = 4096;
  for (int64_t start = 0; start < numel; start += kBlock) {
    const int64_t count = std::min(kBlock, numel - start);
    if (!any_non_finite<Bits>(v + start, count)) continue;
    for (int64_t i = start; i < start + count; ++i) {
      if (!std::isfinite(v[i])) return static_cast<double>(v[i]);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<NonFinite> first_non_finite(const NamedTensors& tensors) {
  for (const auto& [name, tensor] : tensors) {
    std::optional<double> bad;
    if (tensor.dtype() == DType::f32) bad = first_non_finite_value<uint32_t>(tensor.data<float>(), tensor.numel());
    if (tensor.dtype() == DType::f64) bad = first_non_finite_value<uint64_t>(tensor.data<double>(), tensor.numel());
    if (bad) return NonFinite{name, *bad};
  }
  return std::nullopt;
}

bool has_checkpoint(const std::string& dir) {
  // A commit record is a save that the next load completes; staged files alone are a save that
  // never committed, which the next load discards.
  std::error_code ec;
  return fs::exists(path_in(dir, "model.safetensors"), ec) || io::has_commit(dir);
}

std::string options_to_json(const TrainOptions& options) { return json(options).dump(); }

const std::set<std::string>& checkpoint_file_names() {
  static const std::set<std::string> kFiles = {"model.safetensors", "optimizer.safetensors",
                                               "config.json",       "tokenizer.json",
                                               "trainer_state.json", "log.jsonl",
                                               io::kManifest};
  return kFiles;
}

bool is_checkpoint_file(const std::string& path) {
  std::error_code ec;  // a relative path under a removed working directory: no checkpoint there
  const fs::path p = fs::absolute(path, ec).lexically_normal();
  if (ec) return false;
  const std::string name = p.filename().string();
  return (checkpoint_file_names().count(name) > 0 || name.rfind(".tinygpt", 0) == 0) &&
         has_checkpoint(p.parent_path().string());
}

void recover_checkpoint(const std::string& dir) {
  const io::DirectoryLock lock(dir, io::DirectoryLock::Mode::exclusive);
  io::recover_commit(dir);
}

void save_checkpoint(const std::string& dir, const nn::Module& model, std::string config_json,
                     const data::Tokenizer& tokenizer, const Optimizer* optimizer,
                     const RunState* run,
                     const std::vector<std::pair<std::string, std::string>>& extra_files) {
  save_checkpoint(dir, model.state_dict(), std::move(config_json), tokenizer, optimizer, run, extra_files);
}

void save_checkpoint(const std::string& dir, const nn::NamedTensors& weights, std::string config_json,
                     const data::Tokenizer& tokenizer, const Optimizer* optimizer,
                     const RunState* run,
                     const std::vector<std::pair<std::string, std::string>>& extra_files) {
  std::vector<std::pair<std::string, std::string>> files = {
      {"model.safetensors", io::encode_safetensors(weights, {{"format", "pt"}})},
      {"config.json", std::move(config_json)},
      {"tokenizer.json", tokenizer.to_json()},
  };
  if (optimizer != nullptr) {
    files.emplace_back("optimizer.safetensors",
                       io::encode_safetensors(optimizer->state(),
                                          {{"steps_taken", std::to_string(optimizer->steps_taken())}}));
  }
  if (run != nullptr) {
    json state = {{"format_version", kRunStateVersion},
                        {"step", run->step},
                        {"ranks", run->ranks},
                        {"options", run->options},
                        {"val_fraction", run->val_fraction},
                        {"data_rng", hex_state(run->data_rng)},
                        {"dropout_rng", hex_state(run->dropout_rng)},
                        {"best_val_loss", std::isfinite(run->best_val_loss) ? json(run->best_val_loss) : json(nullptr)}};
    jf::put_path(state, "data_source", run->data_source);
    if (!run->data_sha256.empty()) {
      state["data_bytes"] = run->data_bytes;
      state["data_sha256"] = run->data_sha256;
    }
    if (run->best_step > 0) state["best_step"] = run->best_step;
    if (run->keep_best) state["keep_best"] = true;
    if (!run->init_from.empty()) {
      state["init_from"] = {{"model_sha256", run->init_from_sha256}, {"step", run->init_from_step}};
      jf::put_path(state["init_from"], "dir", run->init_from);
    }
    files.emplace_back("trainer_state.json", state.dump(2) + "\n");
  }
  std::set<std::string> appended;  // a log the run writes a line at a time stays in place
  for (const auto& [name, bytes] : extra_files) {
    files.emplace_back(name, bytes);
    appended.insert(name);
  }
  io::commit_files(dir, files, appended);
}

namespace {

// model.safetensors' tensors, checked finite; its SHA-256 into `weights_sha256` when given.
NamedTensors read_weights(const io::CommittedFiles& files, std::string* weights_sha256) {
  const std::string weights_path = files.path_of("model.safetensors");
  NamedTensors weights = files.read_safetensors("model.safetensors", weights_sha256).tensors;
  check_finite(weights, weights_path);
  return weights;
}

// A model of `config` for a file's weights: built without drawing initial values it would lose.
template <class Model, class Config>
std::unique_ptr<Model> model_to_load(const Config& config) {
  const SkipInitGuard weights_from_the_file;
  return std::make_unique<Model>(config, 0);
}

// The weights given to `model` by `give`, a refusal naming the file. The loaders hold the decoded
// tensors only to give them, so by default the parameters take their data rather than a copy.
void load_weights(nn::Module& model, const NamedTensors& weights, const std::string& weights_path,
                  void (nn::Module::*give)(const NamedTensors&) = &nn::Module::take_state_dict) {
  try {
    (model.*give)(weights);
  } catch (const Error& e) {
    throw FormatError(weights_path + ": ", e);
  }
}

// An encoder-decoder's weights, checked for the sizes config.json gives before the model is
// built (as check_size_dimensions does for a GPT), then loaded by name.
std::unique_ptr<nn::EncoderDecoder> read_encoder_decoder(const io::CommittedFiles& files,
                                                         const std::string& config_text,
                                                         std::string* weights_sha256) {
  const std::string weights_path = files.path_of("model.safetensors");
  const nn::EncoderDecoderConfig c =
      encoder_decoder_config_from_json(config_text, files.path_of("config.json"));
  const NamedTensors weights = read_weights(files, weights_sha256);
  const auto expect = [&](const std::string& name, const Shape& shape) {
    const auto it = std::find_if(weights.begin(), weights.end(), [&](const auto& t) { return t.first == name; });
    if (it == weights.end()) throw FormatError(fmt::format("{}: no tensor '{}'", weights_path, name));
    if (it->second.shape() != shape) {
      throw FormatError(fmt::format("{}: tensor '{}' has shape {}, but config.json says {}",
                                    weights_path, name, it->second.shape().str(), shape.str()));
    }
  };
  expect("model.shared.weight", Shape({c.vocab_size, c.d_model}));
  for (const char* stack : {"encoder", "decoder"}) {
    expect(fmt::format("model.{}.embed_positions.weight", stack), Shape({c.max_position_embeddings, c.d_model}));
    const int64_t layers = stack == std::string("encoder") ? c.encoder_layers : c.decoder_layers;
    const int64_t ffn = stack == std::string("encoder") ? c.encoder_ffn_dim : c.decoder_ffn_dim;
    expect(fmt::format("model.{}.layers.{}.fc1.weight", stack, layers - 1), Shape({ffn, c.d_model}));
    const std::string beyond = fmt::format("model.{}.layers.{}.", stack, layers);
    if (std::any_of(weights.begin(), weights.end(), [&](const auto& t) { return t.first.rfind(beyond, 0) == 0; })) {
      throw FormatError(fmt::format("{}: more {} layers than config.json's {}", weights_path, stack, layers));
    }
  }
  auto model = model_to_load<nn::EncoderDecoder>(c);
  load_weights(*model, weights, weights_path);
  return model;
}

// An encoder's model files: BERT's config.json (with tinygpt's keys), its weights under Hugging
// Face's names, and a masked-LM tokenizer.json; a folder without one tinygpt reads (a WordPiece
// vocab.txt) is refused in one line, as the model could not be given text.
std::unique_ptr<Task> read_encoder(const io::CommittedFiles& files, const std::string& config_text,
                                   std::string* weights_sha256) {
  const EncoderConfig config = encoder_config_from_json(config_text, files.path_of("config.json"));
  const std::string tokenizer_path = files.path_of("tokenizer.json");
  if (!files.contains("tokenizer.json")) {
    throw FormatError(fmt::format("{} has no tokenizer.json (a WordPiece vocab.txt is not one tinygpt reads)",
                                  files.dir()));
  }
  std::shared_ptr<const data::MaskedLMTokenizer> tokenizer;
  try {
    tokenizer = std::make_shared<const data::MaskedLMTokenizer>(
        data::MaskedLMTokenizer::from_json(files.read("tokenizer.json")));
  } catch (const ValueError& e) {
    throw FormatError(tokenizer_path + " is not a masked LM's tokenizer tinygpt reads: ", e);
  }
  if (tokenizer->vocab_size() != config.model.vocab_size) {
    throw FormatError(fmt::format("{}: {} tokens, but config.json says vocab_size {}", tokenizer_path,
                                  tokenizer->vocab_size(), config.model.vocab_size));
  }
  const std::string weights_path = files.path_of("model.safetensors");
  const io::SafetensorsFile weights = files.read_safetensors("model.safetensors", weights_sha256);
  check_finite(weights.tensors, weights_path);
  auto model = model_to_load<nn::BertForMaskedLM>(config.model);
  std::vector<std::string> notes;  // a head newly initialised is a model that fills no masks
  try {
    load_hugging_face_bert(*model, weights, notes);
  } catch (const Error& e) {
    throw FormatError("", e);
  }
  if (!notes.empty()) throw FormatError(notes.front());
  return std::make_unique<EncoderTask>(std::move(model), std::move(tokenizer), config.mask_probability, nullptr);
}

// The family config.json names; a type no family claims, or a file that is no JSON object, goes
// to the GPT reader, which says what is wrong with it.
ModelFamily family_of_file(const std::string& config_text, const std::string& config_path) {
  const json j = json::parse(config_text, nullptr, /*allow_exceptions=*/false);
  try {
    return family_of(j, config_path);
  } catch (const ValueError&) {
    return ModelFamily::gpt;
  }
}

// A registered type's model, built by its factory from config.json and given the saved weights.
std::unique_ptr<nn::CausalLM> read_own_model(const io::CommittedFiles& files, const std::string& config_text,
                                             std::string* weights_sha256) {
  const NamedTensors weights = read_weights(files, weights_sha256);
  std::unique_ptr<nn::CausalLM> model = build_registered(json::parse(config_text), 0);
  // Copied: a registered model may tie two of its parameters by sharing one buffer, which
  // taking each tensor's own data would untie.
  load_weights(*model, weights, files.path_of("model.safetensors"), &nn::Module::load_state_dict);
  return model;
}

// The model files of one save, a GPT's. The readers put model.safetensors' SHA-256 into
// `weights_sha256` only when given one: only a run started from the weights records which they
// were, and where no manifest has it checked, hashing half a gigabyte would be a wait before a
// sample's first token.
LoadedModel read_gpt(const io::CommittedFiles& files, std::string* weights_sha256) {
  const std::string config_path = files.path_of("config.json");
  const std::string tokenizer_path = files.path_of("tokenizer.json");
  const std::string weights_path = files.path_of("model.safetensors");
  const std::string config_text = files.read("config.json");
  const ModelFamily family = family_of_file(config_text, config_path);
  if (family != ModelFamily::gpt) {
    throw FormatError(fmt::format("{}: model_type \"{}\" is {}, not a GPT", config_path,
                                  json::parse(config_text).value("model_type", ""),
                                  family == ModelFamily::encoder_decoder ? "an encoder-decoder"
                                  : family == ModelFamily::encoder       ? "an encoder"
                                                                         : "a registered model"));
  }
  LoadedModel out{config_from_json(config_text, config_path), read_folder_tokenizer(files), nullptr, ""};
  if (out.tokenizer->vocab_size() != out.config.vocab_size) {
    throw FormatError(fmt::format("{}: {} tokens, but config.json says vocab_size {}",
                                  tokenizer_path, out.tokenizer->vocab_size(), out.config.vocab_size));
  }
  const NamedTensors weights = gpt2_weights(
      files.read_safetensors("model.safetensors", weights_sha256),
      out.config);
  check_size_dimensions(out.config, weights, weights_path);
  check_finite(weights, weights_path);
  out.model = model_to_load<nn::GPT>(out.config);
  load_weights(*out.model, weights, weights_path);
  return out;
}

// The model files of one save as the task of the family config.json names, with no data yet.
std::unique_ptr<Task> read_task(const io::CommittedFiles& files, std::string* weights_sha256 = nullptr) {
  const std::string config_text = files.read("config.json");
  const ModelFamily family = family_of_file(config_text, files.path_of("config.json"));
  if (family == ModelFamily::gpt) {
    LoadedModel gpt = read_gpt(files, weights_sha256);
    return std::make_unique<LanguageModelTask>(std::move(gpt.model), std::move(gpt.tokenizer), nullptr);
  }
  if (family == ModelFamily::encoder) return read_encoder(files, config_text, weights_sha256);
  const std::string tokenizer_path = files.path_of("tokenizer.json");
  data::TokenizerPtr tokenizer = read_folder_tokenizer(files);
  const auto sized = [&](int64_t vocab_size) {
    if (tokenizer->vocab_size() != vocab_size) {
      throw FormatError(fmt::format("{}: {} tokens, but config.json says vocab_size {}", tokenizer_path,
                                    tokenizer->vocab_size(), vocab_size));
    }
    return std::move(tokenizer);
  };
  if (family == ModelFamily::encoder_decoder) {
    std::unique_ptr<nn::EncoderDecoder> model = read_encoder_decoder(files, config_text, weights_sha256);
    const int64_t vocab_size = model->config().vocab_size;
    return std::make_unique<PairTask>(std::move(model), sized(vocab_size), nullptr);
  }
  std::unique_ptr<nn::CausalLM> model = read_own_model(files, config_text, weights_sha256);
  const int64_t vocab_size = model->shape().vocab_size;
  return std::make_unique<LanguageModelTask>(std::move(model), sized(vocab_size), nullptr);
}

RunState read_run_state(const io::CommittedFiles& files) {
  if (!files.contains("trainer_state.json")) {
    throw IOError(fmt::format("{} has no trainer_state.json: it is not a resumable run", files.dir()));
  }
  const std::string path = files.path_of("trainer_state.json");
  const json j = jf::parse(files.read("trainer_state.json"), path);
  const int64_t version = jf::integer(jf::required(j, "format_version", path), "format_version", path);
  if (version != kRunStateVersion) {
    jf::fail(path, "unsupported format_version {} (this tinygpt reads version {})", version,
             kRunStateVersion);
  }
  RunState run;
  // A saved run has taken a step; a negative one reached the optimiser's bias correction as
  // NaN and was reported as a diverged run.
  run.step = jf::integer(jf::required(j, "step", path), "step", path, 1, kMaxSteps);
  if (j.contains("ranks")) run.ranks = jf::integer(j["ranks"], "ranks", path, 1, kMaxSteps);
  run.options = options_from_json(jf::required(j, "options", path), path);
  run.data_source = jf::path(j, "data_source", path);
  run.val_fraction = jf::number(jf::required(j, "val_fraction", path), "val_fraction", path);
  if (j.contains("data_sha256")) {  // runs saved before they were recorded have neither
    run.data_bytes = jf::unsigned_integer(jf::required(j, "data_bytes", path), "data_bytes", path);
    run.data_sha256 = jf::string(j["data_sha256"], "data_sha256", path);
    if (run.data_sha256.size() != 64 ||
        run.data_sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
      jf::fail(path, "key 'data_sha256' is not a SHA-256 (64 hex digits): '{}'",
               run.data_sha256.substr(0, 70));
    }
  }
  if (j.contains("best_step")) run.best_step = jf::integer(j["best_step"], "best_step", path, 1, kMaxSteps);
  if (j.contains("keep_best")) {
    if (!j["keep_best"].is_boolean()) jf::fail(path, "key 'keep_best' must be true or false");
    run.keep_best = j["keep_best"].get<bool>();
  }
  if (j.contains("init_from")) {
    const json& from = j["init_from"];
    if (!from.is_object()) jf::fail(path, "key 'init_from' is not an object");
    run.init_from = jf::path(from, "dir", path);
    run.init_from_sha256 = jf::string(jf::required(from, "model_sha256", path), "init_from.model_sha256", path);
    run.init_from_step = jf::integer(jf::required(from, "step", path), "init_from.step", path, 0, kMaxSteps);
  }
  run.data_rng = parse_state(jf::required(j, "data_rng", path), "data_rng", path);
  run.dropout_rng = parse_state(jf::required(j, "dropout_rng", path), "dropout_rng", path);
  const json best = j.value("best_val_loss", json(nullptr));
  run.best_val_loss = best.is_null() ? NAN : jf::number(best, "best_val_loss", path);
  if (!(run.val_fraction >= 0.0 && run.val_fraction < 1.0)) {
    throw FormatError(fmt::format("{}: val_fraction must be in [0, 1), got {}", path, run.val_fraction));
  }
  try {
    run.options.validate();
  } catch (const Error& e) {
    throw FormatError(path + ": ", e);
  }
  return run;
}

// The optimiser's step count (its bias correction) and the run's step are saved together, so
// a pair that disagrees was put together from two saves.
void check_steps_taken(const SafetensorsFile& optimizer, int64_t step, const std::string& state_path) {
  const auto it = optimizer.metadata.find("steps_taken");
  if (it == optimizer.metadata.end()) {
    throw FormatError(fmt::format("{}: no \"steps_taken\" in its metadata", optimizer.source));
  }
  if (it->second != std::to_string(step)) {
    throw FormatError(fmt::format("{}: steps_taken {} disagrees with step {} of {}", optimizer.source,
                                  excerpt(it->second), step, state_path));
  }
}

// The committed files of `dir`, read under its shared lock without changing anything.
io::CommittedFiles committed(const std::string& dir, const char* what) {
  const fs::file_type type = io::file_type_of(dir, fmt::format("{} directory", what));
  if (type == fs::file_type::directory) return io::CommittedFiles(dir);
  if (type != fs::file_type::not_found) {  // a file of a checkpoint, most likely: name the folder it is in
    const fs::path parent = fs::path(dir).parent_path();
    throw IOError(fmt::format("{} is a file, not a {} directory{}", dir, what,
                              parent.empty() ? "" : fmt::format(" (its folder is {})", parent.string())));
  }
  throw IOError(fmt::format("{} directory {} does not exist", what, dir));
}

}  // namespace

LoadedModel load_model(const std::string& dir) {
  std::string weights_sha256;
  LoadedModel out = read_gpt(committed(dir, "model"), &weights_sha256);
  out.weights_sha256 = std::move(weights_sha256);
  return out;
}

std::unique_ptr<Task> load_task(const std::string& dir) { return read_task(committed(dir, "model")); }

LoadedTask load_task_to_fine_tune(const std::string& dir) {
  const io::CommittedFiles files = committed(dir, "model");
  LoadedTask out{nullptr, ""};
  out.task = read_task(files, &out.weights_sha256);
  return out;
}

std::optional<std::string> model_kind(const std::string& dir) {
  try {
    const io::CommittedFiles files = committed(dir, "model");
    if (!files.contains("config.json")) return std::nullopt;
    const std::string text = files.read("config.json");
    switch (family_of_file(text, files.path_of("config.json"))) {
      case ModelFamily::gpt: return "gpt";
      case ModelFamily::encoder_decoder: return "encoder-decoder";
      case ModelFamily::encoder: return "encoder";
      case ModelFamily::registered: return json::parse(text).at("model_type").get<std::string>();
    }
  } catch (const Error&) {
  }
  return std::nullopt;
}

RunState load_run_state(const std::string& dir) { return read_run_state(committed(dir, "run")); }

SavedRun load_run(const std::string& dir, bool tolerate_damaged_log) {
  const io::CommittedFiles files = committed(dir, "run");  // one save, under one lock
  std::unique_ptr<Task> task = read_task(files);
  RunState state = read_run_state(files);
  SafetensorsFile optimizer = files.read_safetensors("optimizer.safetensors");
  check_steps_taken(optimizer, state.step, files.path_of("trainer_state.json"));
  std::string log, damage;
  try {
    if (files.contains("log.jsonl")) log = files.read_prefix("log.jsonl");
  } catch (const Error& e) {
    if (!tolerate_damaged_log) throw;
    damage = e.what();
  }
  return SavedRun{std::move(task), std::move(state), std::move(optimizer), std::move(log), std::move(damage)};
}

}  // namespace tinygpt::train
