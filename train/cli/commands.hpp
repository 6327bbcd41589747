#pragma once
// The tinygpt subcommands. Each add_*_command registers one subcommand with its flags and the
// callback that runs it; errors are thrown as tinygpt::Error and reported by main().
#include <signal.h>

#include <CLI/CLI.hpp>

#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/dist/communicator.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/head_analysis.hpp"
#include "tinygpt/plot/loss_plot.hpp"
#include "tinygpt/train/memory_estimate.hpp"

namespace tinygpt::cli {

void add_train_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_heads_command(CLI::App& app);
void add_bench_command(CLI::App& app);

// Flag checks whose messages say what the value must be, e.g. "--lr: must be a finite number
// > 0, got '0'"; CLI11's own Range prints 300-digit bounds and calls "x" out of range.
CLI::Validator integer_in(int64_t min, int64_t max);
// A finite number in [min, max] ([min, max) when max_open); max may be +infinity.
CLI::Validator number_in(double min, double max, bool max_open = false);
CLI::Validator positive_number();  // finite and > 0
CLI::Validator seed_value();       // an integer in [0, 2^64 - 1]: never negative, never wrapped

// `text` with its spaces turned into line breaks so that no line is longer than `width` (for
// --help footers; CLI11 prints them as they are).
std::string wrap_words(const std::string& text, size_t width);

// Model shape flags shared by train and bench.
struct ModelFlags {
  int64_t layers = 2;
  int64_t heads = 8;
  int64_t d_model = 64;
  int64_t block = 64;
  double dropout = 0.0;
  std::string pos = "learned";  // --pos: learned, sinusoidal, rope, alibi or none
  int64_t kv_heads = 0;         // --kv-heads: 0 means --heads

  void add_to(CLI::App& cmd);
  nn::GPTConfig config(int64_t vocab_size = 0) const;  // 0: a run sets it from its data
};

// A library's refusal of a setting (GPTConfig::validate, TrainOptions::validate, the Trainer) in
// the command line's terms: "GPTConfig: n_kv_head 3 does not divide n_head 2" becomes
// "--kv-heads 3 does not divide --heads 2". The checks live in the library; only the names change.
std::string in_flag_terms(const std::string& message);

// SIGINT and SIGTERM while it lives: the handler records the signal and restores the default
// disposition (a second signal ends the process at once); agreed() tells the training loop,
// the same on every rank, whether to stop.
class StopSignals {
 public:
  StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals();
  // The signal to stop for (SIGINT first), 0 for none; a collective under mpirun (every rank
  // calls it once per step).
  int agreed(dist::Communicator& world) const;
  void restore();  // the dispositions from before

 private:
  struct sigaction old_int_ {}, old_term_ {};
  bool restored_ = false;
};

// Thrown once train has saved its checkpoint after SIGINT/SIGTERM: main exits with 128 + signal.
struct Interrupted {
  int signal;
};

// The flags that set a run's memory: the refusal of train::check_training_memory, or
// std::bad_alloc, in their terms.
inline constexpr const char* kActivationFlags = "--batch/--block";
inline constexpr const char* kModelFlags = "--layers/--d-model";
std::string memory_in_flag_terms(const train::MemoryError& e);

// f(), with "<context>: " put before the message of a ValueError it throws.
template <class F>
auto with_context(const std::string& context, F&& f) {
  try {
    return f();
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("{}: {}", context, e.what()));
  }
}

// The ids of a flag's text; an error names the flag and the character the model does not know.
std::vector<int64_t> encode_flag(const char* flag, const std::string& text,
                                 const data::CharTokenizer& tokenizer);

// Why the head probes cannot run on a model of `config` ("" when they can). They repeat a random
// sequence of at least 2 distinct characters twice, so they need a context of 4 and a
// vocabulary of 2. Every place that probes heads (train's tracking and final analysis, heads)
// asks this.
std::string head_probe_obstacle(const nn::GPTConfig& config);

// Probes for the head analysis: `text` if given, else windows of the run's data source.
struct HeadProbeSet {
  heads::HeadProbes probes;
  std::vector<int64_t> picture;  // the ids drawn in the heatmaps
};
HeadProbeSet make_probes(const data::CharTokenizer& tokenizer, int64_t block,
                         const std::string& text, const std::string& data_source);
// Where the head report goes.
struct HeadsOutput {
  std::string heatmap_dir;  // one PNG per head and a grid per layer
  bool json = false;        // the caller prints JSON: no table
  std::string html;         // the attention explorer page ("" for none)
  std::string run_dir;      // the run whose log.jsonl the page draws (may have none)
  const heads::EachHeadAblation* ablation = nullptr;  // its table follows the role table
};
// Writes the heatmaps and the explorer page and, unless json, prints the head table (followed by
// the ablation table when given) and a terminal preview; returns the report.
heads::HeadReport show_heads(nn::GPT& model, const data::CharTokenizer& tokenizer,
                             const HeadProbeSet& set, const HeadsOutput& out);

// The attention explorer (tinygpt::report) for `picture` and its attention maps (one (H,T,T)
// tensor per layer), the head report (with each head's ablation results when measured) and the
// run's log.jsonl, written atomically to `path`.
void save_explorer_page(const std::string& path, const std::string& run_dir, const nn::GPT& model,
                        const data::CharTokenizer& tokenizer, const std::vector<int64_t>& picture,
                        const std::vector<Tensor>& maps, const heads::HeadReport& report,
                        const heads::EachHeadAblation* ablation);

// The training and validation losses of log.jsonl records (steps and evaluations).
struct LossSeries {
  std::vector<plot::LossPoint> train, val;
};
LossSeries loss_series(const std::vector<nlohmann::json>& log);
// Draws <out_dir>/heads_over_time.png from the records' "heads" and "in_context" fields beside the
// loss, and prints when each head formed; does nothing when no record has them.
void report_formation(const std::vector<nlohmann::json>& log, const std::string& out_dir,
                      const std::string& title);

}  // namespace tinygpt::cli
