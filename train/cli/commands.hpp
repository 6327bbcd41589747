#pragma once
// The tinygpt subcommands. Each add_*_command registers one subcommand with its flags and the
// callback that runs it; errors are thrown as tinygpt::Error and reported by main().
#include <CLI/CLI.hpp>

#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/heads/head_analysis.hpp"

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

  void add_to(CLI::App& cmd);
  nn::GPTConfig config(int64_t vocab_size) const;
};

// f(), with "<context>: " put before the message of a ValueError it throws.
template <class F>
auto with_context(const std::string& context, F&& f) {
  try {
    return f();
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("{}: {}", context, e.what()));
  }
}

// The one text source with no file: the built-in corpus (data/toy_corpus.hpp).
constexpr const char* kToyCorpus = "builtin:toy";
// The text of a data source: kToyCorpus or a file path.
std::string load_text(const std::string& source);
// `text` (read from `source`) encoded with `tokenizer` and split for context `block`; errors
// (a character outside the vocabulary, a text too short for one window) name the source.
data::TextDataset make_dataset(const std::string& text, const std::string& source,
                               const data::CharTokenizer& tokenizer, int64_t block,
                               double val_fraction);

// The ids of a flag's text; an error names the flag and the character the model does not know.
std::vector<int64_t> encode_flag(const char* flag, const std::string& text,
                                 const data::CharTokenizer& tokenizer);

// Probes for the head analysis: `text` if given, else windows of the run's data source.
struct HeadProbeSet {
  heads::HeadProbes probes;
  std::vector<int64_t> picture;  // the ids drawn in the heatmaps
};
HeadProbeSet make_probes(const data::CharTokenizer& tokenizer, int64_t block,
                         const std::string& text, const std::string& data_source);
// Prints the head table (or JSON) and writes the heatmaps into out_dir; returns the report.
heads::HeadReport show_heads(nn::GPT& model, const data::CharTokenizer& tokenizer,
                             const HeadProbeSet& set, const std::string& out_dir, bool json);

}  // namespace tinygpt::cli
