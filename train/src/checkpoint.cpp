#include "tinygpt/train/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/io/safetensors.hpp"

namespace tinygpt::train {
namespace fs = std::filesystem;
using nlohmann::json;
using io::FormatError;
using io::IOError;
using io::load_safetensors;
using io::read_file;
using io::SafetensorsFile;

// TrainOptions <-> JSON, field by field (used by trainer_state.json).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainOptions, steps, batch, grad_accum, lr, min_lr, warmup, lr_decay_steps,
                                   weight_decay, beta1, beta2, grad_clip, optimizer, momentum,
                                   eval_every, eval_iters, seed)

namespace {

std::string path_in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

std::string hex_state(const Generator::State& s) {
  return fmt::format("{:016x}{:016x}{:016x}{:016x}", s[0], s[1], s[2], s[3]);
}

Generator::State parse_state(const std::string& hex, const std::string& source) {
  Generator::State s{};
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw FormatError(fmt::format("{}: bad generator state '{}'", source, hex));
  }
  for (size_t i = 0; i < 4; ++i) s[i] = std::stoull(hex.substr(16 * i, 16), nullptr, 16);
  return s;
}

// Reads j[key] as T, or throws FormatError naming the file and the key.
template <class T>
T field(const json& j, const char* key, const std::string& source) {
  if (!j.is_object() || !j.contains(key)) {
    throw FormatError(fmt::format("{}: missing key '{}'", source, key));
  }
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw FormatError(fmt::format("{}: key '{}' has the wrong type ({})", source, key,
                                  j.at(key).dump()));
  }
}

TrainOptions options_from_json(json j, const std::string& source) {
  // Runs saved before gradient accumulation existed took one micro-batch per step.
  if (j.is_object() && !j.contains("grad_accum")) j["grad_accum"] = 1;
  try {
    return j.get<TrainOptions>();
  } catch (const json::exception& e) {
    throw FormatError(fmt::format("{}: bad \"options\" ({})", source, e.what()));
  }
}

json parse_json(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw FormatError(fmt::format("{}: not valid JSON ({})", source, e.what()));
  }
}

data::CharTokenizer tokenizer_from_json(const std::string& text, const std::string& source) {
  try {
    return data::CharTokenizer::from_json(text);
  } catch (const Error& e) {
    throw FormatError(fmt::format("{}: {}", source, e.what()));
  }
}

// The dimensions that set a GPT's size (vocab_size, n_positions, n_embd, n_layer) against the
// weights file, before the model is built: otherwise a damaged config.json (n_embd 20000) made
// the load allocate tens of gigabytes, and meet the OOM killer, before comparing any shape.
void check_size_dimensions(const nn::GPTConfig& config, const SafetensorsFile& weights,
                           const std::string& source) {
  const auto expect = [&](const char* name, const Shape& shape) {
    const Shape& found = weights.at(name).shape();
    if (found != shape) {
      throw FormatError(fmt::format("{}: tensor '{}' has shape {}, but config.json says {}",
                                    source, name, found.str(), shape.str()));
    }
  };
  expect("transformer.wte.weight", Shape({config.vocab_size, config.n_embd}));
  const bool learned = config.position_embedding == nn::PositionEmbedding::learned;
  if (learned) {
    expect("transformer.wpe.weight", Shape({config.block_size, config.n_embd}));
  } else if (std::any_of(weights.tensors.begin(), weights.tensors.end(),
                         [](const auto& t) { return t.first == "transformer.wpe.weight"; })) {
    throw FormatError(fmt::format(
        "{}: has transformer.wpe.weight, but config.json says position_embedding_type \"{}\"",
        source, nn::position_embedding_name(config.position_embedding)));
  }
  std::set<std::string> layers;  // the "<i>" of every "transformer.h.<i>.<rest>"
  const std::string prefix = "transformer.h.";
  for (const auto& [name, tensor] : weights.tensors) {
    if (name.compare(0, prefix.size(), prefix) == 0) {
      layers.insert(name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size()));
    }
  }
  if (static_cast<int64_t>(layers.size()) != config.n_layer) {
    throw FormatError(fmt::format("{}: {} transformer layers, but config.json says n_layer {}",
                                  source, layers.size(), config.n_layer));
  }
}

}  // namespace

bool has_checkpoint(const std::string& dir) {
  // A commit record is a save that the next load completes; staged files alone are a save that
  // never committed, which the next load discards.
  return fs::exists(path_in(dir, "model.safetensors")) || io::has_commit_record(dir);
}

void recover_checkpoint(const std::string& dir) {
  const io::DirectoryLock lock(dir);
  io::recover_commit(dir);
}

std::string config_to_json(const nn::GPTConfig& c) {
  const json j = {{"architectures", {"GPT2LMHeadModel"}},
                  {"model_type", "gpt2"},
                  {"vocab_size", c.vocab_size},
                  {"n_positions", c.block_size},
                  {"n_ctx", c.block_size},
                  {"n_embd", c.n_embd},
                  {"n_layer", c.n_layer},
                  {"n_head", c.n_head},
                  {"n_inner", nullptr},
                  {"activation_function", "gelu_new"},
                  {"layer_norm_epsilon", c.layer_norm_epsilon},
                  {"resid_pdrop", c.dropout},
                  {"embd_pdrop", c.dropout},
                  {"attn_pdrop", c.dropout},
                  {"tie_word_embeddings", c.tie_weights},
                  {"bias", c.bias},
                  {"position_embedding_type", nn::position_embedding_name(c.position_embedding)},
                  {"rope_theta", c.rope_theta},
                  {"num_key_value_heads", c.kv_heads()},
                  {"torch_dtype", "float32"}};
  return j.dump(2) + "\n";
}

nn::GPTConfig config_from_json(const std::string& text, const std::string& source) {
  const json j = parse_json(text, source);
  nn::GPTConfig c;
  c.vocab_size = field<int64_t>(j, "vocab_size", source);
  c.block_size = field<int64_t>(j, "n_positions", source);
  c.n_embd = field<int64_t>(j, "n_embd", source);
  c.n_layer = field<int64_t>(j, "n_layer", source);
  c.n_head = field<int64_t>(j, "n_head", source);
  c.layer_norm_epsilon = field<double>(j, "layer_norm_epsilon", source);
  c.dropout = j.contains("resid_pdrop") ? field<double>(j, "resid_pdrop", source) : 0.0;
  c.tie_weights = j.contains("tie_word_embeddings") ? field<bool>(j, "tie_word_embeddings", source) : true;
  c.bias = j.contains("bias") ? field<bool>(j, "bias", source) : true;
  // Checkpoints from before the attention variants have none of these: learned, multi-head.
  try {
    if (j.contains("position_embedding_type")) {
      c.position_embedding =
          nn::parse_position_embedding(field<std::string>(j, "position_embedding_type", source));
    }
  } catch (const ValueError& e) {
    throw FormatError(fmt::format("{}: position_embedding_type: {}", source, e.what()));
  }
  if (j.contains("rope_theta")) c.rope_theta = field<double>(j, "rope_theta", source);
  c.n_kv_head = j.contains("num_key_value_heads") ? field<int64_t>(j, "num_key_value_heads", source) : c.n_head;
  try {
    c.validate();
  } catch (const Error& e) {
    throw FormatError(fmt::format("{}: {}", source, e.what()));
  }
  return c;
}

void save_checkpoint(const std::string& dir, nn::GPT& model, const data::CharTokenizer& tokenizer,
                     const Optimizer* optimizer, const RunState* run,
                     const std::vector<std::pair<std::string, std::string>>& extra_files) {
  std::vector<std::pair<std::string, std::string>> files = {
      {"model.safetensors", io::encode_safetensors(model.state_dict(), {{"format", "pt"}})},
      {"config.json", config_to_json(model.config())},
      {"tokenizer.json", tokenizer.to_json()},
  };
  if (optimizer != nullptr) {
    files.emplace_back("optimizer.safetensors",
                       io::encode_safetensors(optimizer->state(),
                                          {{"steps_taken", std::to_string(optimizer->steps_taken())}}));
  }
  if (run != nullptr) {
    const json state = {{"format_version", 1},
                        {"step", run->step},
                        {"ranks", run->ranks},
                        {"options", run->options},
                        {"data_source", run->data_source},
                        {"val_fraction", run->val_fraction},
                        {"data_rng", hex_state(run->data_rng)},
                        {"dropout_rng", hex_state(run->dropout_rng)},
                        {"best_val_loss", std::isfinite(run->best_val_loss) ? json(run->best_val_loss) : json(nullptr)}};
    files.emplace_back("trainer_state.json", state.dump(2) + "\n");
  }
  files.insert(files.end(), extra_files.begin(), extra_files.end());
  io::commit_files(dir, files);
}

namespace {

// The readers below expect the caller to hold the directory's lock, recovery done.

LoadedModel read_model(const std::string& dir) {
  const std::string config_path = path_in(dir, "config.json");
  const std::string tokenizer_path = path_in(dir, "tokenizer.json");
  const std::string weights_path = path_in(dir, "model.safetensors");
  LoadedModel out{config_from_json(read_file(config_path), config_path),
                  tokenizer_from_json(read_file(tokenizer_path), tokenizer_path), nullptr};
  if (out.tokenizer.vocab_size() != out.config.vocab_size) {
    throw FormatError(fmt::format("{}: {} characters, but config.json says vocab_size {}",
                                  tokenizer_path, out.tokenizer.vocab_size(), out.config.vocab_size));
  }
  const SafetensorsFile weights = load_safetensors(weights_path);
  check_size_dimensions(out.config, weights, weights_path);
  out.model = std::make_unique<nn::GPT>(out.config, 0);
  try {
    out.model->load_state_dict(weights.tensors);
  } catch (const Error& e) {
    throw FormatError(fmt::format("{}: {}", weights_path, e.what()));
  }
  // A NaN or an infinity in the weights (a diverged run's, or damage) gives nonsense silently.
  for (const auto& [name, tensor] : weights.tensors) {
    const auto bad = [&](auto value) {
      throw FormatError(fmt::format("{}: tensor '{}' holds a non-finite value ({})",
                                    weights_path, name, value));
    };
    if (tensor.dtype() == DType::f32) {
      const float* v = tensor.data<float>();
      for (int64_t i = 0; i < tensor.numel(); ++i) if (!std::isfinite(v[i])) bad(v[i]);
    } else if (tensor.dtype() == DType::f64) {
      const double* v = tensor.data<double>();
      for (int64_t i = 0; i < tensor.numel(); ++i) if (!std::isfinite(v[i])) bad(v[i]);
    }
  }
  return out;
}

RunState read_run_state(const std::string& dir) {
  const std::string path = path_in(dir, "trainer_state.json");
  if (!fs::exists(path)) {
    throw IOError(fmt::format("{} has no trainer_state.json: it is not a resumable run", dir));
  }
  const json j = parse_json(read_file(path), path);
  RunState run;
  run.step = field<int64_t>(j, "step", path);
  run.options = options_from_json(field<json>(j, "options", path), path);
  run.data_source = field<std::string>(j, "data_source", path);
  run.val_fraction = field<double>(j, "val_fraction", path);
  run.ranks = j.contains("ranks") ? field<int64_t>(j, "ranks", path) : 1;
  run.data_rng = parse_state(field<std::string>(j, "data_rng", path), path);
  run.dropout_rng = parse_state(field<std::string>(j, "dropout_rng", path), path);
  run.best_val_loss = j.contains("best_val_loss") && j["best_val_loss"].is_number()
                          ? j["best_val_loss"].get<double>()
                          : NAN;
  // A saved run has taken a step; a negative one reached the optimiser's bias correction as
  // NaN and was reported as a diverged run.
  if (run.step < 1) throw FormatError(fmt::format("{}: step must be at least 1, got {}", path, run.step));
  if (!(run.val_fraction >= 0.0 && run.val_fraction < 1.0)) {
    throw FormatError(fmt::format("{}: val_fraction must be in [0, 1), got {}", path, run.val_fraction));
  }
  try {
    run.options.validate();
  } catch (const Error& e) {
    throw FormatError(fmt::format("{}: {}", path, e.what()));
  }
  return run;
}

// read() under the directory's lock, after finishing or discarding an interrupted save: the
// files read are those of one save.
template <class Read>
auto read_locked(const std::string& dir, const char* what, Read read) {
  if (!fs::is_directory(dir)) throw IOError(fmt::format("{} directory {} does not exist", what, dir));
  const io::DirectoryLock lock(dir);
  io::recover_commit(dir);
  return read();
}

}  // namespace

LoadedModel load_model(const std::string& dir) {
  return read_locked(dir, "model", [&] { return read_model(dir); });
}

RunState load_run_state(const std::string& dir) {
  return read_locked(dir, "run", [&] { return read_run_state(dir); });
}

SavedRun load_run(const std::string& dir) {
  return read_locked(dir, "run", [&] {
    LoadedModel model = read_model(dir);
    RunState state = read_run_state(dir);
    SafetensorsFile optimizer = load_safetensors(path_in(dir, "optimizer.safetensors"));
    const std::string log_path = path_in(dir, "log.jsonl");
    std::string log = fs::exists(log_path) ? read_file(log_path) : std::string();
    return SavedRun{std::move(model), std::move(state), std::move(optimizer), std::move(log)};
  });
}

}  // namespace tinygpt::train
