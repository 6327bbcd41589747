#pragma once
// What the commands do with a trained model, one implementation per model family: generate
// from it, evaluate it on a split of a text, score its heads, and report the end of its training
// run. commands_for picks the family's implementation from the task's type (train/task.hpp), the
// one place analysis tells the families apart; a command calls the interface and prints.
//
// A request holds the command's settings by their library names. A setting the family does not
// take, or a value it cannot use, is refused with a SettingError naming it (its first named
// part), so a program can call the setting by its own name (the CLI: its flag); other failures
// are ValueErrors, and memory a step cannot have a train::MemoryError.
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tinygpt/analysis/circuits.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/heads/counterfactual.hpp"
#include "tinygpt/nn/sampler.hpp"
#include "tinygpt/train/run.hpp"
#include "tinygpt/train/task.hpp"

namespace tinygpt::analysis {

struct SampleRequest {
  std::string prompt;  // a language model's text to continue ("": the start of a document)
  std::string source;  // an encoder-decoder's input
  nn::SampleOptions options;
  bool temperature_given = false;  // else an encoder-decoder decodes greedily
  bool json = false;               // the caller prints the JSON: no text as it comes
  // The generated text as it comes (a language model's prompt first, then each character).
  std::function<void(const std::string&)> on_text;
};
struct SampleOutput {
  nlohmann::json json;  // the input, the text, the settings and the seconds
  std::string speed;    // one or two lines on the speed and the cache it kept
};

struct EvalRequest {
  std::string text;         // the text whose split is evaluated
  std::string data_source;  // where it came from, as messages name it
  std::string split_name;   // "val", "train" or "all"
  data::Split split = data::Split::val;
  double val_fraction = 0.1;
  int64_t batch = 32;  // windows or pairs per forward pass
  int64_t block = 0;   // a language model's window (0: its context)
  bool pseudo = false;  // an encoder's pseudo-perplexity too (each position masked alone)
};

struct HeadsRequest {
  std::string text;           // a language model's probe text ("": the run's own windows)
  std::string heatmap_dir;    // "" for no pictures
  std::string html;           // the attention explorer page ("" for none)
  std::string mask_view_dir;  // an encoder's [MASK] view pictures, one per mask of text ("" for none)
  bool json = false;          // the caller prints the JSON: no tables
  std::FILE* out = stdout;    // where tables and paths are printed
  bool ablate_each = false;   // remove each head in turn
  std::string ablate = "zero";  // how: zero, or mean (a language model's)
  std::string ablate_heads;   // heads removed together, "L.H,L.H"
  int64_t attribute = -1;     // the query position to attribute (-1: none)
  int64_t pairs = 500;        // an encoder-decoder's held-out pairs
  bool composition = false, importance = false, patch = false, counterfactual = false,
       prune_curve = false;
  double epsilon = heads::CounterfactualOptions{}.epsilon;
  // The settings the caller chose rather than defaulted, by their names above: a family refuses
  // those it does not take.
  std::set<std::string> given;
  // The text a run recorded (state.data_source), `setting` being the one that names another.
  std::function<std::string(const train::RunState& state, const char* setting)> run_text;
  // Runs its argument, which draws the pictures (the caller may hold off signals meanwhile).
  std::function<void(const std::function<void()>&)> draw = [](const std::function<void()>& f) { f(); };
};

class TaskCommands {
 public:
  virtual ~TaskCommands() = default;
  // What the model is, for messages: "a GPT", "an encoder-decoder", "a language model".
  virtual std::string what() const = 0;
  // The setting that gives sample its input ("prompt" or "source").
  virtual const char* sample_input() const = 0;
  // The settings that size one evaluation pass ("batch", and "block" for a language model).
  virtual std::vector<std::string> eval_rows_settings() const = 0;
  virtual SampleOutput sample(const SampleRequest& request) = 0;
  virtual MethodOutput evaluate(const EvalRequest& request) = 0;
  // The heads' report printed to request.out (unless json); returns its JSON.
  virtual nlohmann::json heads(const HeadsRequest& request) = 0;
  // The end of `run`'s training: the curves, held-out results, heatmaps and explorer page, printed
  // to `out`. `probes`: a language model's, as its evaluations scored the heads (null: none).
  virtual void report_run(train::Run& run, const heads::ProbeSet* probes, std::FILE* out) = 0;
};

// The commands of `task`'s family for the model saved in `model_dir` (as messages name it).
std::unique_ptr<TaskCommands> commands_for(train::Task& task, const std::string& model_dir);

}  // namespace tinygpt::analysis
