#include "tinygpt/train/checkpoint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include "tinygpt/train/atomic_file.hpp"
#include "tinygpt/train/safetensors.hpp"

namespace tinygpt::train {
namespace fs = std::filesystem;
using nlohmann::json;

// TrainOptions <-> JSON, field by field (used by trainer_state.json).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainOptions, steps, batch, lr, min_lr, warmup, lr_decay_steps,
                                   weight_decay, beta1, beta2, grad_clip, optimizer, momentum,
                                   eval_every, eval_iters, seed)

namespace {

constexpr const char* kCommitRecord = kCheckpointCommitRecord;
constexpr const char* kStaged = kCheckpointStagedSuffix;

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

TrainOptions options_from_json(const json& j, const std::string& source) {
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

// An exclusive flock on the directory itself, held while a save stages and commits its files
// and while a load recovers and reads them. Without it a `tinygpt sample` run during training
// discarded the files the trainer had staged (to it they were a crashed save's), and the trainer
// then failed to rename them. The kernel drops the lock when its holder dies.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir)
      : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ < 0) fail(fmt::format("cannot open checkpoint directory {} to lock it", dir));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int error = errno;
        ::close(fd_);
        errno = error;
        fail(fmt::format("cannot lock checkpoint directory {}", dir));
      }
    }
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock() { ::close(fd_); }  // closing the last descriptor releases the lock

 private:
  // Throws "<what>: <the reason errno gives>".
  [[noreturn]] static void fail(const std::string& what) {
    const int error = errno;
    throw IOError(fmt::format("{}: {}", what, std::error_code(error, std::generic_category()).message()));
  }
  int fd_;
};

// recover_checkpoint for a caller that holds the directory's lock.
void recover_locked(const std::string& dir) {
  const std::string record = path_in(dir, kCommitRecord);
  if (fs::exists(record)) {  // committed: roll forward
    const json names = parse_json(read_file(record), record);
    for (const auto& name : names) {
      const std::string target = path_in(dir, name.get<std::string>());
      if (fs::exists(target + kStaged)) fs::rename(target + kStaged, target);
    }
    sync_directory(dir);
    fs::remove(record);
    sync_directory(dir);
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {  // never committed: discard
    const std::string name = entry.path().filename().string();
    if (name.size() > std::strlen(kStaged) &&
        name.compare(name.size() - std::strlen(kStaged), std::string::npos, kStaged) == 0) {
      fs::remove(entry.path());
    }
  }
}

void commit_files(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IOError(fmt::format("cannot create checkpoint directory {}: {}", dir, ec.message()));
  const DirectoryLock lock(dir);
  recover_locked(dir);
  json names = json::array();
  for (const auto& [name, bytes] : files) {
    write_file_synced(path_in(dir, name + kStaged), bytes);
    names.push_back(name);
  }
  // The record is staged like the files, so a save killed while writing it leaves only
  // *.partial files, which the next recovery discards; renaming it into place commits the save.
  const std::string record = path_in(dir, kCommitRecord);
  write_file_synced(record + kStaged, names.dump());
  fs::rename(record + kStaged, record);
  sync_directory(dir);
  recover_locked(dir);
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
  expect("transformer.wpe.weight", Shape({config.block_size, config.n_embd}));
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
  return fs::exists(path_in(dir, "model.safetensors")) || fs::exists(path_in(dir, kCommitRecord));
}

void recover_checkpoint(const std::string& dir) {
  const DirectoryLock lock(dir);
  recover_locked(dir);
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
      {"model.safetensors", encode_safetensors(model.state_dict(), {{"format", "pt"}})},
      {"config.json", config_to_json(model.config())},
      {"tokenizer.json", tokenizer.to_json()},
  };
  if (optimizer != nullptr) {
    files.emplace_back("optimizer.safetensors",
                       encode_safetensors(optimizer->state(),
                                          {{"steps_taken", std::to_string(optimizer->steps_taken())}}));
  }
  if (run != nullptr) {
    const json state = {{"format_version", 1},
                        {"step", run->step},
                        {"options", run->options},
                        {"data_source", run->data_source},
                        {"val_fraction", run->val_fraction},
                        {"data_rng", hex_state(run->data_rng)},
                        {"dropout_rng", hex_state(run->dropout_rng)},
                        {"best_val_loss", std::isfinite(run->best_val_loss) ? json(run->best_val_loss) : json(nullptr)}};
    files.emplace_back("trainer_state.json", state.dump(2) + "\n");
  }
  files.insert(files.end(), extra_files.begin(), extra_files.end());
  commit_files(dir, files);
}

LoadedModel load_model(const std::string& dir) {
  if (!fs::is_directory(dir)) throw IOError(fmt::format("model directory {} does not exist", dir));
  const DirectoryLock lock(dir);  // the files read are those of one save
  recover_locked(dir);
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

RunState load_run_state(const std::string& dir) {
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

void load_optimizer_state(const std::string& dir, Optimizer& optimizer, int64_t steps_taken) {
  const std::string path = path_in(dir, "optimizer.safetensors");
  const SafetensorsFile state = load_safetensors(path);
  try {
    optimizer.load_state(state.tensors, steps_taken);
  } catch (const Error& e) {
    throw FormatError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace tinygpt::train
