#pragma once
// A checkpoint directory, in Hugging Face GPT-2's conventions so other tools can read it:
//   model.safetensors      GPT-2 tensor names and shapes (see nn/gpt.hpp)
//   config.json            GPT-2 config keys (n_layer, n_head, n_embd, n_positions, vocab_size, ...)
//   tokenizer.json         Hugging Face's tokenizer.json: the run's characters, or byte-level BPE
// and, for resuming a run exactly:
//   optimizer.safetensors  the optimiser's moments ("exp_avg.<param>", ...)
//   trainer_state.json     step, ranks, options (grad_accum among them), data source and its
//                          size and SHA-256 (data_bytes, data_sha256), generator states, best
//                          validation loss
//
// All files of one save are committed together (io/commit.hpp), so a checkpoint is never
// half-written; saves and loads of one directory hold its lock, so a load (tinygpt sample during
// training) neither reads a save half-done nor discards the files a running save has staged.
#include <memory>
#include <optional>
#include <string>
#include <set>
#include <vector>

#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/io/safetensors.hpp"
#include "tinygpt/nn/encoder_decoder.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/train/task.hpp"
#include "tinygpt/train/trainer.hpp"

namespace tinygpt::train {

// The file that makes a checkpoint folder a resumable run.
inline constexpr const char* kTrainerStateFile = "trainer_state.json";

// What `tinygpt train --resume` needs beyond the weights and the optimiser moments.
struct RunState {
  TrainOptions options;
  std::string data_source;  // a file path, or "builtin:toy"
  // The text's size and SHA-256 (lowercase hex) when the run started, so a resume on changed
  // data is noticed; runs saved before they were recorded have none (data_sha256 empty).
  uint64_t data_bytes = 0;
  std::string data_sha256;
  // Whether a text of `bytes` bytes with this SHA-256 is not the one recorded (never, without one).
  bool text_differs(uint64_t bytes, const std::string& sha256) const {
    return !data_sha256.empty() && (bytes != data_bytes || sha256 != data_sha256);
  }
  double val_fraction = 0.1;
  int64_t step = 0;
  int64_t ranks = 1;  // processes of the data-parallel run that saved it (informational)
  Generator::State data_rng{};
  Generator::State dropout_rng{};
  double best_val_loss = 0.0;  // NaN before the first evaluation
  int64_t best_step = 0;       // the evaluation that reached it (0: none, or saved before kept)
  bool keep_best = false;      // the best evaluation's weights are kept in <dir>/best
  // A fine-tuned run's origin (train --init-from): the checkpoint directory it started from
  // (absolute), the SHA-256 of that checkpoint's model.safetensors, and the step it had been
  // trained to (0 when it was not a tinygpt run). init_from is empty for a run from scratch.
  std::string init_from;
  std::string init_from_sha256;
  int64_t init_from_step = 0;
};

// A GPT's model files, loaded (load_model).
struct LoadedModel {
  nn::GPTConfig config;
  data::TokenizerPtr tokenizer;
  std::unique_ptr<nn::GPT> model;
  std::string weights_sha256;  // of model.safetensors' bytes: which weights these are
};

// Writes a model's files (its state_dict as model.safetensors, `config_json` as config.json, the
// tokenizer), plus the optimiser and run state when given, as one commit. A run's Task gives its
// config.json (Task::config_json); a lone causal LM its config_json(). Extra files (e.g. the loss
// log) can ride along in the same commit; one that `dir` already holds with exactly its bytes (a
// log written a line at a time) stays in place (io::commit_files' `appended`).
void save_checkpoint(const std::string& dir, const nn::Module& model, std::string config_json,
                     const data::Tokenizer& tokenizer, const Optimizer* optimizer = nullptr,
                     const RunState* run = nullptr,
                     const std::vector<std::pair<std::string, std::string>>& extra_files = {});
// The same with the weights as named tensors (Task::checkpoint_tensors: a family whose files name
// them otherwise than its state_dict).
void save_checkpoint(const std::string& dir, const nn::NamedTensors& weights, std::string config_json,
                     const data::Tokenizer& tokenizer, const Optimizer* optimizer = nullptr,
                     const RunState* run = nullptr,
                     const std::vector<std::pair<std::string, std::string>>& extra_files = {});

// Loads and validates config.json, tokenizer.json and model.safetensors of a GPT. Throws
// tinygpt::Error with one line naming the file and the fault (missing, corrupt, shapes that
// disagree with the config, a vocabulary that disagrees with vocab_size, an encoder-decoder).
LoadedModel load_model(const std::string& dir);
// Whatever model `dir` holds, as the task of its family (config.json's model_type, family_of in
// task.hpp): its model and tokenizer, with no data until Task::set_data. The same errors.
std::unique_ptr<Task> load_task(const std::string& dir);
// A checkpoint to fine-tune from: load_task's task, and the SHA-256 of the model.safetensors it
// was read from (which weights these are).
struct LoadedTask {
  std::unique_ptr<Task> task;
  std::string weights_sha256;
};
LoadedTask load_task_to_fine_tune(const std::string& dir);
// The family of the model in `dir` as its config.json names it (Task::kind(): "gpt",
// "encoder-decoder", "encoder" or a registered model_type), the weights left unread; nullopt
// when there is no config.json to read (the loaders then say why).
std::optional<std::string> model_kind(const std::string& dir);
// trainer_state.json alone (what a run was trained on, for tinygpt heads).
RunState load_run_state(const std::string& dir);

// Everything a run directory holds, read under its lock in one go so that all of it comes from
// one save (Run::resume builds on it). log.jsonl may be missing (empty log).
struct SavedRun {
  std::unique_ptr<Task> task;  // no data yet
  RunState state;
  io::SafetensorsFile optimizer;  // optimizer.safetensors, loaded into the optimiser by the caller
  std::string log;                // log.jsonl's text
  std::string log_damage;         // with tolerate_damaged_log: why log.jsonl could not be read
};
// With `tolerate_damaged_log`, a log.jsonl that is missing or fails its checksum leaves `log`
// empty and says why in `log_damage` (the weights and optimiser state are still checked).
SavedRun load_run(const std::string& dir, bool tolerate_damaged_log = false);

bool has_checkpoint(const std::string& dir);

// The files a run's checkpoint keeps: weights, optimiser state, config, tokenizer, run state,
// log and manifest.
const std::set<std::string>& checkpoint_file_names();

// True when `path` names a file a checkpoint keeps (weights, optimiser state, config, tokenizer,
// run state, log, manifest, tinygpt's hidden files) in a folder that holds one: an output path
// (a page, a picture) must never replace it.
bool is_checkpoint_file(const std::string& path);
// Finishes or discards a save that was interrupted (see above); loads call it.
void recover_checkpoint(const std::string& dir);

// config.json <-> GPTConfig (nn/gpt.hpp says which model_type it claims).
using nn::kGpt2Architecture;
using nn::kGpt2ModelType;
using nn::kTinyGptArchitecture;
using nn::kTinyGptModelType;
using nn::loads_as_gpt2;
// `training_precision` ("f32", "bf16"; "" for none) is recorded as tinygpt_training_precision:
// the weights themselves are always f32 (torch_dtype) and load in either precision.
std::string config_to_json(const nn::GPTConfig& config, const std::string& training_precision = "");
// TrainOptions as trainer_state.json's "options" holds them.
std::string options_to_json(const TrainOptions& options);
nn::GPTConfig config_from_json(const std::string& text, const std::string& source);

// config.json <-> EncoderDecoderConfig: BART's keys where they mean the same (d_model,
// encoder_layers, decoder_attention_heads, encoder_ffn_dim, max_position_embeddings, the token
// ids, ...), and a model_type that does not claim to be BART.
inline constexpr const char* kEncoderDecoderModelType = "tinygpt-encoder-decoder";
inline constexpr const char* kEncoderDecoderArchitecture = "TinyGPTForConditionalGeneration";
std::string config_to_json(const nn::EncoderDecoderConfig& config,
                           const std::string& training_precision = "");
nn::EncoderDecoderConfig encoder_decoder_config_from_json(const std::string& text,
                                                          const std::string& source);

}  // namespace tinygpt::train
