#pragma once
// The tinygpt subcommands. Each add_*_command registers one subcommand with its flags and the
// callback that runs it; errors are thrown as tinygpt::Error and reported by main().
#include <signal.h>

#include <array>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/distributed/communicator.hpp"
#include "tinygpt/nn/encoder_decoder.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/memory_estimate.hpp"
#include "tinygpt/train/task.hpp"

namespace tinygpt::cli {

void add_train_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_fill_command(CLI::App& app);
void add_heads_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_prune_command(CLI::App& app);
void add_memory_command(CLI::App& app);
void add_chart_command(CLI::App& app);
// `tinygpt help [COMMAND]`: what `tinygpt [COMMAND] --help` prints.
void add_help_command(CLI::App& app);
void add_completion_command(CLI::App& app);
void add_tokenizer_command(CLI::App& app);

// The rules every subcommand's flags follow, set once on `app` after its subcommands: a flag is
// given at most once (a second value would silently win over the first: "--resume A --resume B"),
// and a flag's value is never empty (an unset shell variable is not "not given": it must not
// fall back to the toy corpus or runs/tinygpt). Either is a usage error naming the flag.
void apply_flag_rules(CLI::App& app);

// A command line that cannot be right, found before any work: a value the library refuses
// ("--kv-heads 3 does not divide --heads 2"), flags that contradict each other or the run they
// resume. main reports it as it does what CLI11 refuses while parsing: one line naming the
// subcommand's help, exit status 2. (Under mpirun, one found inside a collective setup reaches
// main as that setup's CollectiveError and exits 1.)
class UsageError : public ValueError {
 public:
  using ValueError::ValueError;
};

// Flag checks whose messages say what the value must be and what was given, e.g. "--lr: must be
// a finite number > 0, got '0'" (and that refuse NaN, which compares false with any bound).
CLI::Validator integer_in(int64_t min, int64_t max);
// A finite number in [min, max] ([min, max) when max_open); max may be +infinity.
CLI::Validator number_in(double min, double max, bool max_open = false);
CLI::Validator positive_number();  // finite and > 0
CLI::Validator seed_value();       // an integer in [0, 2^64 - 1]: never negative, never wrapped

// --threads on `cmd`, into `threads`: the OpenMP team, 0 meaning OMP_NUM_THREADS if set, else
// every core (set_num_threads); `more` is added to the help.
CLI::Option* add_threads_flag(CLI::App& cmd, int& threads, const std::string& more = "");

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
  static constexpr int64_t kDefaultFeatures = 64;
  // An integer flag left out, told from any value given (a bad one included, which the setting's
  // check then refuses in its own words).
  static constexpr int64_t kNotGiven = std::numeric_limits<int64_t>::min();
  std::string attention = "full";  // --attention: full, window, strided, linear, bigbird or performer
  int64_t window = 0;              // --window: keys a query sees with --attention window
  int64_t global_tokens = 0;       // --global-tokens: leading positions every query sees
  int64_t stride = 0;              // --stride: band and column spacing with --attention strided
  int64_t bigbird_block = 0;       // --block-size: BigBird's block of positions
  int64_t random_blocks = 0;       // --random-blocks: BigBird's random key blocks per query block
  int64_t features = kNotGiven;      // --features: Performer's M per head (kDefaultFeatures)
  int64_t redraw_every = kNotGiven;  // --redraw-every: steps between Performer's redraws (0)
  bool no_attention_scale = false;  // --no-attention-scale: softmax of q.k, not q.k / sqrt(d)
  std::string cross = "attention";  // --cross: an encoder-decoder's view of the source (or none)
  std::string cross_score = "dot";  // --cross-score: how its cross-attention scores
  double mask_prob = 0.15;          // --mask-prob: an encoder's share of positions masked
  bool pre_ln = false;              // --pre-ln: an encoder's blocks LayerNorm before each sublayer

  void add_to(CLI::App& cmd);
  // vocab_size 0: a run sets it from its data; `seed`, the run's, draws BigBird's random blocks.
  nn::GPTConfig config(int64_t vocab_size = 0, uint64_t seed = 0) const;
  // The encoder-decoder of these flags: --layers in each stack, --heads in every attention,
  // --block positions for a source and for a target, feed-forward width 4 --d-model, the
  // encoder's self-attention --attention's (`seed` draws BigBird's random key blocks).
  nn::EncoderDecoderConfig encoder_decoder_config(uint64_t seed = 0) const;
  // The pattern --attention and its flags give (checked where a model is built).
  AttentionPattern attention_pattern(uint64_t seed) const;
  // Sets --attention and its flags to give `p`.
  void set_attention(const AttentionPattern& p);
  // The masked-LM encoder of these flags: --block characters a window (the context adds [CLS]
  // and [SEP]), feed-forward width 4 --d-model, its self-attention --attention's, bidirectional
  // (`seed` draws BigBird's random key blocks).
  train::EncoderConfig encoder_config(uint64_t seed = 0) const;
  // The flags that give `c`: the inverses of config() and encoder_decoder_config().
  static ModelFlags of(const nn::GPTConfig& c);
  static ModelFlags of(const nn::EncoderDecoderConfig& c);
  static ModelFlags of(const train::EncoderConfig& c);
  static const char* attention_flag(const AttentionPattern& pattern);  // --attention's value
};

// A library's refusal of a setting (GPTConfig::validate, TrainOptions::validate, the Trainer) in
// the command line's terms: each setting its message names is called by its flag, found in one
// table by the setting's name, and the operation is left out: "GPTConfig: n_kv_head 3 does not
// divide n_head 2" reads "--kv-heads 3 does not divide --heads 2". The checks live in the library;
// only the names change.
std::string in_flag_terms(const Error& e);
// The flag that sets the library's `setting` (the same table), or the setting's own name.
std::string flag_of(const std::string& setting);

// f(), its refusals in the command line's terms: a SettingError a UsageError, another ValueError
// the same message with flags for settings.
template <class F>
auto in_flag_terms_of(F&& f) {
  try {
    return f();
  } catch (const UsageError&) {
    throw;
  } catch (const SettingError& e) {
    throw UsageError(in_flag_terms(e));
  } catch (const ValueError& e) {
    throw ValueError(in_flag_terms(e));
  }
}

// A program's words for the library's settings, by the setting's name.
using SettingNames = std::map<std::string, std::string>;
// e's message without its operations, each setting in `names` called by its words there (the
// others by the library's name): in_flag_terms' mechanism, for callers whose words are not flags.
std::string in_terms_of(const Error& e, const SettingNames& names);

// Any error as the command line shows it. The library names the class or function that raised
// an error ("CharTokenizer::encode") apart from what went wrong: a C++ caller's clue, noise to a
// user, so it is left out; the paths and flags the message names stay.
std::string in_user_terms(const std::exception& e);

// JSON text for stdout. A path that is not UTF-8 (Linux allows any bytes but NUL) shows each
// invalid byte as U+FFFD, where nlohmann would throw once the command's work is done.
std::string json_text(const nlohmann::json& j, int indent = -1);

// A fact about the command's input that bears on its result (a run's text that changed since it
// trained), held until the command ends: main prints "tinygpt: note: <fact>: <consequence>" after
// a command that succeeded, or ends a failure's one line with "; <fact>", which may explain it.
struct InputNote {
  std::string fact, consequence;
};
void add_input_note(InputNote note);
// The notes added so far, in order; main reads them once the command has ended.
const std::vector<InputNote>& input_notes();

// SIGINT, SIGTERM and SIGHUP while it lives: the handler records the signal (a second one ends the
// process at once, unless it is the same signal within a second: one request delivered twice);
// agreed() tells the training loop, the same on every rank, whether to stop.
class StopSignals {
 public:
  StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals();
  // The signal to stop for (SIGINT first), 0 for none; a collective under mpirun (every rank
  // calls it once per step).
  int agreed(distributed::Communicator& world) const;
  void restore();  // the dispositions from before

 private:
  std::array<struct sigaction, 3> old_{};  // SIGINT's, SIGTERM's and SIGHUP's
  bool restored_ = false;
};

// draw(), with SIGINT/SIGTERM/SIGHUP held off until its next picture: one that comes meanwhile
// drops the set of pictures being drawn whole (analysis::HeatmapSet leaves no half-drawn folder).
// Returns that signal, 0 when draw() finished.
int draw_unless_stopped(const std::function<void()>& draw);

// Thrown once train has saved its checkpoint after a stop signal: main exits with 128 + signal.
struct Interrupted {
  int signal;
};

// The flags that set a run's memory: the refusal of train::check_memory in their terms.
inline constexpr const char* kActivationFlags = "--batch/--block";
inline constexpr const char* kModelFlags = "--layers/--d-model";
std::string memory_in_flag_terms(const train::MemoryError& e);
// train::check_memory, its refusal a ValueError naming `activation_flags` (and `model_flags`
// when the estimate counts a model).
void check_memory_in_flag_terms(const train::MemoryEstimate& estimate,
                                const char* activation_flags = kActivationFlags,
                                const char* model_flags = kModelFlags);

// What to lower when an allocation of the command `cmd` fails (std::bad_alloc), in its own flags:
// "lower --batch/--block (activations) or --layers/--d-model (model)".
void set_memory_advice(const CLI::App& cmd, std::string advice);
// main's one line for a std::bad_alloc in the subcommand `app` ran, with that command's advice.
std::string out_of_memory_message(const CLI::App& app);

// f(), with "<context>: " put before the message of a ValueError it throws.
template <class F>
auto with_context(const std::string& context, F&& f) {
  try {
    return f();
  } catch (const ValueError& e) {
    throw ValueError(context + ": ", e);
  }
}

// The text the run of `state` trained on, read where its record says. When it is not there, the
// message ends saying that `flag` names another text (eval --data, heads --text); when its bytes
// changed since the run recorded them, an InputNote says so.
std::string read_run_text(const train::RunState& state, const char* flag);

// The ids of a flag's text; an error names the flag and the character the model does not know.
std::vector<int64_t> encode_flag(const char* flag, const std::string& text,
                                 const data::Tokenizer& tokenizer);

// The --out FILE a command replaces whole: never a file of a checkpoint, nor its own input `input`
// (`input_words` says which, e.g. "the --data text"). A UsageError naming both.
void check_out_file(const std::string& out, const std::string& input, const std::string& input_words);

// --tokenizer PATH: a tokenizer.json (byte-level BPE, or a run's character tokenizer), or a
// folder holding one or GPT-2's vocab.json and merges.txt. A file it cannot read or a format
// it does not take is an Error naming the flag.
data::TokenizerPtr load_tokenizer(const std::string& path);
// The largest BPE vocabulary the commands train (tokenizer train --vocab-size, train --tokenizer bpe:N).
inline constexpr int64_t kMaxBpeVocab = int64_t{1} << 20;

}  // namespace tinygpt::cli
