#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/data/bpe.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/sha256.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::cli {

namespace {

// The whole of `text` as a base-10 integer or a number; nullopt for anything else (trailing
// characters, empty text, out of range).
std::optional<int64_t> parse_integer(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno == ERANGE) return std::nullopt;
  return value;
}

std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

std::string number_bounds(double min, double max, bool min_open, bool max_open) {
  if (std::isinf(max)) return fmt::format("{} {}", min_open ? ">" : ">=", min);
  return fmt::format("in {}{}, {}{}", min_open ? "(" : "[", min, max, max_open ? ")" : "]");
}

CLI::Validator finite_number(double min, double max, bool min_open, bool max_open) {
  const std::string bounds = number_bounds(min, max, min_open, max_open);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> value = parse_number(text);
        const bool ok = value && std::isfinite(*value) && (min_open ? *value > min : *value >= min) &&
                        (max_open ? *value < max : *value <= max);
        return ok ? "" : fmt::format("must be a finite number {}, got '{}'", bounds, text);
      },
      "FLOAT " + bounds);
}

}  // namespace

CLI::Validator integer_in(int64_t min, int64_t max) {
  const std::string bounds = max == std::numeric_limits<int64_t>::max()
                                 ? fmt::format(">= {}", min)
                                 : fmt::format("in [{}, {}]", min, max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<int64_t> value = parse_integer(text);
        return value && *value >= min && *value <= max
                   ? ""
                   : fmt::format("must be an integer {}, got '{}'", bounds, text);
      },
      "INT " + bounds);
}

CLI::Option* add_threads_flag(CLI::App& cmd, int& threads, const std::string& more) {
  const std::string help =
      "OpenMP threads (0: OMP_NUM_THREADS if set, else all cores): the one pool, which shares "
      "each large product out in pieces, every library call single-threaded" +
      (more.empty() ? "" : "; " + more);
  return cmd.add_option("--threads", threads, help)->check(integer_in(0, 256))->capture_default_str();
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        // strtoull would accept "-1" as 2^64 - 1 and wrap values past 2^64 to the maximum.
        const bool digits = !text.empty() && text.size() <= 20 &&
                            text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const bool ok = digits && (std::strtoull(text.c_str(), nullptr, 10), errno != ERANGE);
        return ok ? "" : fmt::format("must be an integer in [0, 2^64 - 1], got '{}'", text);
      },
      "UINT64");
}

namespace {

// Refuses (UsageError) a flag of `cmd` given twice or with an empty value. CLI11 has by then
// checked each value and kept the last one (the policy apply_flag_rules sets, so that its own "At
// Most 1 required but received 2" never speaks first); results() still holds every value given.
void check_flag_rules(const CLI::App& cmd) {
  for (const CLI::Option* option : cmd.get_options()) {
    const std::vector<std::string>& values = option->results();
    if (values.size() > 1) {
      const bool takes_value = option->get_items_expected_max() > 0;
      throw UsageError(fmt::format("{}: given {} times{}; give each flag at most once",
                                   option->get_name(), values.size(),
                                   takes_value ? fmt::format(" ({})", fmt::join(values, ", ")) : ""));
    }
    if (values.size() == 1 && values.front().empty()) {
      throw UsageError(fmt::format("{}: must not be empty{}", option->get_name(),
                                   option->get_required() ? "" : "; leave it out for its default"));
    }
  }
}

}  // namespace

void apply_flag_rules(CLI::App& app) {
  for (CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* option : cmd->get_options()) {
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    // Run once the subcommand's flags are parsed, before its callback does any work.
    cmd->parse_complete_callback([cmd] { check_flag_rules(*cmd); });
  }
}

CLI::Validator number_in(double min, double max, bool max_open) {
  return finite_number(min, max, false, max_open);
}

CLI::Validator positive_number() {
  return finite_number(0.0, std::numeric_limits<double>::infinity(), true, false);
}

void ModelFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--layers", layers, "transformer blocks")->check(integer_in(1, 64))->capture_default_str();
  cmd.add_option("--heads", heads, "attention heads per block")->check(integer_in(1, 64))->capture_default_str();
  cmd.add_option("--d-model", d_model, "embedding width (a multiple of --heads)")
      ->check(integer_in(1, 8192))->capture_default_str();
  cmd.add_option("--block", block, "context length in tokens (characters, or subwords with a BPE tokenizer)")->check(integer_in(1, 65536))->capture_default_str();
  cmd.add_option("--dropout", dropout, "dropout probability, in [0, 1)")
      ->check(number_in(0.0, 1.0, true))->capture_default_str();
  cmd.add_option("--pos", pos,
                 "position scheme: learned (GPT-2's table), sinusoidal (fixed, added), rope (rotary "
                 "q and k), alibi (linear score bias) or none")
      ->check(CLI::IsMember({"learned", "sinusoidal", "rope", "alibi", "none"}))->capture_default_str();
  cmd.add_option("--kv-heads", kv_heads,
                 "key/value heads, dividing --heads (grouped-query attention; 1: multi-query; "
                 "default: --heads)")
      ->check(integer_in(1, 64));
  cmd.add_option("--attention", attention,
                 "which earlier positions a query sees and how: full (all of them, softmax), window "
                 "(the last --window, itself included, plus the first --global-tokens), strided "
                 "(the last --stride and every --stride-th one before them), linear "
                 "(all of them, weighted by elu+1 feature maps: O(T) time, constant-size state; "
                 "with learned, sinusoidal or no positions), bigbird (the last --window, the "
                 "first --global-tokens and, per block of --block-size positions, --random-blocks "
                 "key blocks at or before it, drawn from --seed) or performer (as linear, with "
                 "FAVOR+'s --features positive orthogonal random features, which estimate softmax "
                 "attention). An encoder (--arch encoder, or an encoder-decoder's) takes full or "
                 "bigbird, bidirectional: --window reaches both ways, the global tokens also see "
                 "every position and the random key blocks come from the whole sequence")
      ->check(CLI::IsMember({"full", "window", "strided", "linear", "bigbird", "performer"}))->capture_default_str();
  cmd.add_option("--window", window,
                 "with --attention window or bigbird: keys each query sees, itself included "
                 "(Mistral's sliding_window)")
      ->check(integer_in(1, 1 << 30));
  cmd.add_option("--global-tokens", global_tokens,
                 "with --attention window or bigbird: leading positions every later query also sees")
      ->check(integer_in(0, 1 << 30));
  cmd.add_option("--stride", stride,
                 "with --attention strided: S, the band of the last S keys and the spacing of the "
                 "columns before it (the Sparse Transformer's; about sqrt(--block))")
      ->check(integer_in(1, 1 << 30));
  cmd.add_option("--block-size", bigbird_block,
                 "with --attention bigbird: B, the positions of a block (dividing --block); each "
                 "block of queries sees --random-blocks random blocks of keys")
      ->check(integer_in(1, 1 << 30));
  cmd.add_option("--random-blocks", random_blocks,
                 "with --attention bigbird: R, the random key blocks at or before each query "
                 "block (at most --block / --block-size; default 0)")
      ->check(integer_in(0, 1 << 30));
  cmd.add_option("--features", features,
                 fmt::format("with --attention performer: M, the random features per head "
                             "(default {}; the error against softmax falls about as 1/sqrt(M))",
                             kDefaultFeatures));
  cmd.add_option("--redraw-every", redraw_every,
                 "with --attention performer: draw new random features every N training steps, "
                 "from the seed and the step (default 0: never; the features are saved in "
                 "model.safetensors)");
  cmd.add_flag("--no-attention-scale", no_attention_scale,
               "leave out attention's 1/sqrt(head width): softmax of the raw dot products, to see "
               "why every transformer scales them (config.json: scale_attn_weights false)");
  cmd.add_option("--cross", cross,
                 "with --arch encoder-decoder: how the decoder sees the source: attention "
                 "(cross-attention in every decoder layer) or none (only the mean of the encoder "
                 "output, added to each decoder input: the fixed-size bottleneck)")
      ->check(CLI::IsMember({"attention", "none"}))->capture_default_str();
  cmd.add_option("--cross-score", cross_score,
                 "with --arch encoder-decoder: how cross-attention scores a source position: dot "
                 "(q.k/sqrt(d)), general (q W k, Luong), concat (v tanh(W [q;k]), Luong) or "
                 "additive (v tanh(q + k), Bahdanau)")
      ->check(CLI::IsMember({"dot", "general", "concat", "additive"}))->capture_default_str();
  cmd.add_option("--mask-prob", mask_prob,
                 "with --arch encoder: the share of positions each batch masks and predicts (BERT's "
                 "0.15; of them 80% become [MASK], 10% a random character, 10% stay)")
      ->check(finite_number(0.0, 1.0, true, false))->capture_default_str();
  cmd.add_flag("--pre-ln", pre_ln,
               "with --arch encoder: LayerNorm before each sublayer (and after the last block), "
               "not after each residual sum as BERT's post-LN blocks");
}

AttentionPattern ModelFlags::attention_pattern(uint64_t seed) const {
  AttentionPattern p;
  if (attention == "linear") p = AttentionPattern::linear_attention();
  if (attention == "window") {
    p.kind = AttentionPattern::Kind::window;
    p.window = window;
    p.global_tokens = global_tokens;
  }
  if (attention == "strided") {
    p.kind = AttentionPattern::Kind::strided;
    p.stride = stride;
  }
  if (attention == "bigbird") {
    p.kind = AttentionPattern::Kind::bigbird;
    p.window = window;
    p.global_tokens = global_tokens;
    p.block = bigbird_block;
    p.random_blocks = random_blocks;
    p.random_blocks_seed = seed;
  }
  if (attention == "performer") {
    p.kind = AttentionPattern::Kind::performer;
    p.features = features != kNotGiven ? features : kDefaultFeatures;
    p.redraw_every = redraw_every != kNotGiven ? redraw_every : 0;
  }
  return p;
}

nn::GPTConfig ModelFlags::config(int64_t vocab_size, uint64_t seed) const {
  nn::GPTConfig c;
  c.vocab_size = vocab_size;
  c.block_size = block;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_embd = d_model;
  c.dropout = dropout;
  c.position_embedding = nn::parse_position_embedding(pos);
  c.n_kv_head = kv_heads > 0 ? kv_heads : heads;
  c.scale_attn_weights = !no_attention_scale;
  c.attention = attention_pattern(seed);
  return c;  // checked by GPTConfig::validate where a model is built
}

nn::EncoderDecoderConfig ModelFlags::encoder_decoder_config(uint64_t seed) const {
  nn::EncoderDecoderConfig c;
  c.d_model = d_model;
  c.encoder_layers = c.decoder_layers = layers;
  c.encoder_attention_heads = c.decoder_attention_heads = heads;
  c.encoder_ffn_dim = c.decoder_ffn_dim = 4 * d_model;
  c.max_position_embeddings = block;
  c.dropout = dropout;
  c.cross_attention = cross != "none";
  c.cross_score = nn::parse_attention_score(cross_score);
  c.encoder_attention = attention_pattern(seed);
  return c;  // the vocabulary and token ids come from the run's data
}

train::EncoderConfig ModelFlags::encoder_config(uint64_t seed) const {
  train::EncoderConfig c;
  c.model.hidden_size = d_model;
  c.model.num_hidden_layers = layers;
  c.model.num_attention_heads = heads;
  c.model.intermediate_size = 4 * d_model;
  c.model.max_position_embeddings = block + 2;
  c.model.hidden_dropout_prob = c.model.attention_probs_dropout_prob = dropout;
  c.model.position = nn::parse_position_embedding(pos);
  c.model.pre_layer_norm = pre_ln;
  c.model.attention = attention_pattern(seed);
  c.mask_probability = mask_prob;
  return c;  // the vocabulary comes from the run's text
}

void ModelFlags::set_attention(const AttentionPattern& p) {
  attention = attention_flag(p);
  window = p.window;
  global_tokens = p.global_tokens;
  stride = p.stride;
  bigbird_block = p.block;
  random_blocks = p.random_blocks;
  if (p.is_performer()) {
    features = p.features;
    redraw_every = p.redraw_every;
  }
}

ModelFlags ModelFlags::of(const nn::GPTConfig& c) {
  ModelFlags m;
  m.layers = c.n_layer;
  m.heads = c.n_head;
  m.d_model = c.n_embd;
  m.block = c.block_size;
  m.dropout = c.dropout;
  m.pos = nn::position_embedding_name(c.position_embedding);
  m.kv_heads = c.kv_heads();
  m.set_attention(c.attention);
  m.no_attention_scale = !c.scale_attn_weights;
  return m;
}

ModelFlags ModelFlags::of(const nn::EncoderDecoderConfig& c) {
  ModelFlags m;
  m.layers = c.encoder_layers;
  m.heads = m.kv_heads = c.encoder_attention_heads;
  m.d_model = c.d_model;
  m.block = c.max_position_embeddings;
  m.dropout = c.dropout;
  m.cross = c.cross_attention ? "attention" : "none";
  m.cross_score = nn::attention_score_name(c.cross_score);
  m.set_attention(c.encoder_attention);
  return m;
}

ModelFlags ModelFlags::of(const train::EncoderConfig& c) {
  ModelFlags m;
  m.layers = c.model.num_hidden_layers;
  m.heads = m.kv_heads = c.model.num_attention_heads;
  m.d_model = c.model.hidden_size;
  m.block = c.model.max_position_embeddings - 2;
  m.dropout = c.model.hidden_dropout_prob;
  m.pos = nn::position_embedding_name(c.model.position);
  m.pre_ln = c.model.pre_layer_norm;
  m.mask_prob = c.mask_probability;
  m.set_attention(c.model.attention);
  return m;
}

const char* ModelFlags::attention_flag(const AttentionPattern& pattern) {
  switch (pattern.kind) {
    case AttentionPattern::Kind::window: return "window";
    case AttentionPattern::Kind::strided: return "strided";
    case AttentionPattern::Kind::linear: return "linear";
    case AttentionPattern::Kind::bigbird: return "bigbird";
    case AttentionPattern::Kind::performer: return "performer";
    case AttentionPattern::Kind::full: break;
  }
  return "full";
}

std::string in_terms_of(const Error& e, const SettingNames& names) {
  return e.in_terms([&names](const std::string& setting) {
    const auto name = names.find(setting);
    return name != names.end() ? name->second : setting;
  });
}

namespace {

// The library's settings the command line's flags set; an encoder-decoder's per-stack settings
// share one flag. "grad-accum" is the name the library's messages use for grad_accum. The rest
// are the settings of the commands' requests (analysis/task_commands.hpp).
const SettingNames& flag_names() {
  static const SettingNames kFlags = {
      {"n_kv_head", "--kv-heads"},   {"n_head", "--heads"},         {"n_embd", "--d-model"},
      {"n_layer", "--layers"},       {"block_size", "--block"},     {"dropout", "--dropout"},
      {"min_lr", "--min-lr"},        {"lr", "--lr"},                {"batch", "--batch"},
      {"grad_accum", "--grad-accum"}, {"grad-accum", "--grad-accum"}, {"warmup", "--warmup"},
      {"lr_decay_steps", "--lr-decay-steps"}, {"weight_decay", "--weight-decay"},
      {"beta1", "--beta1"},          {"beta2", "--beta2"},          {"grad_clip", "--grad-clip"},
      {"momentum", "--momentum"},    {"eval_every", "--eval-every"}, {"eval_iters", "--eval-iters"},
      {"steps", "--steps"},          {"optimizer", "--optimizer"},  {"precision", "--precision"},
      {"d_model", "--d-model"},      {"encoder_layers", "--layers"}, {"decoder_layers", "--layers"},
      {"encoder_attention_heads", "--heads"}, {"decoder_attention_heads", "--heads"},
      {"max_position_embeddings", "--block"}, {"val_fraction", "--val-fraction"},
      {"window", "--window"},        {"global_tokens", "--global-tokens"}, {"stride", "--stride"},
      {"bigbird_block", "--block-size"}, {"random_blocks", "--random-blocks"},
      {"pos", "--pos"},              {"block", "--block"},          {"model", "--model"},
      {"data", "--data"},            {"prompt", "--prompt"},        {"source", "--source"},
      {"text", "--text"},            {"pairs", "--pairs"},          {"ablate", "--ablate"},
      {"ablate_heads", "--ablate-heads"}, {"attribute", "--attribute"}, {"json", "--json"},
      {"heatmap_dir", "--out"},      {"html", "--html"},            {"composition", "--composition"},
      {"importance", "--importance"}, {"patch", "--patch"},         {"counterfactual", "--counterfactual"},
      {"prune_curve", "--prune-curve"}, {"tokenizer", "--tokenizer"},
      {"d_head", "--d-head"},       {"dtype", "--dtype"},          {"scale_attn_weights", "--no-attention-scale"},
      {"cross_score", "--cross-score"},
      {"hidden_size", "--d-model"},  {"num_attention_heads", "--heads"}, {"num_hidden_layers", "--layers"},
      {"hidden_dropout_prob", "--dropout"}, {"attention_probs_dropout_prob", "--dropout"},
      {"mask_probability", "--mask-prob"}, {"pseudo", "--pseudo"},  {"top_k", "--top-k"},
      {"features", "--features"},    {"redraw_every", "--redraw-every"},
      {"encoder_attention", "--attention"}, {"attention", "--attention"},
      {"mask_view", "--mask-view"},  {"resume", "--resume"},      {"force", "--force"},
      {"out", "--out"}};
  return kFlags;
}

}  // namespace

std::string in_flag_terms(const Error& e) { return in_terms_of(e, flag_names()); }

std::string flag_of(const std::string& setting) {
  const auto name = flag_names().find(setting);
  return name != flag_names().end() ? name->second : setting;
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string in_user_terms(const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  return error != nullptr ? error->in_terms() : e.what();
}

void check_out_file(const std::string& out, const std::string& input, const std::string& input_words) {
  std::error_code ec;
  if (train::is_checkpoint_file(out)) {
    throw UsageError(fmt::format("--out {} is a file of the checkpoint in {}; name another file", out,
                                 std::filesystem::absolute(out, ec).parent_path().string()));
  }
  if (std::filesystem::equivalent(out, input, ec)) {
    throw UsageError(fmt::format("--out {} is {}; name another file", out, input_words));
  }
}

std::string memory_in_flag_terms(const train::MemoryError& e) {
  return e.message(kActivationFlags, kModelFlags);
}

void check_memory_in_flag_terms(const train::MemoryEstimate& estimate, const char* activation_flags,
                                const char* model_flags) {
  try {
    train::check_memory(estimate);
  } catch (const train::MemoryError& e) {
    throw ValueError(e.message(activation_flags, model_flags));
  }
}

namespace {
std::map<const CLI::App*, std::string>& memory_advice() {
  static std::map<const CLI::App*, std::string> by_command;
  return by_command;
}
}  // namespace

void set_memory_advice(const CLI::App& cmd, std::string advice) {
  memory_advice()[&cmd] = std::move(advice);
}

std::string out_of_memory_message(const CLI::App& app) {
  std::string message = "out of memory: a buffer could not be allocated";
  for (const CLI::App* cmd : app.get_subcommands()) {
    const auto advice = memory_advice().find(cmd);
    if (advice != memory_advice().end()) message += "; " + advice->second;
  }
  return message;
}

std::string wrap_words(const std::string& text, size_t width) {
  std::string out;
  size_t line_start = 0;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (out.size() > line_start && out.size() - line_start + 1 + word.size() > width) {
      out += '\n';
      line_start = out.size();
    } else if (out.size() > line_start) {
      out += ' ';
    }
    out += word;
  }
  return out;
}

std::vector<int64_t> encode_flag(const char* flag, const std::string& text,
                                 const data::Tokenizer& tokenizer) {
  return with_context(flag, [&] { return tokenizer.encode(text); });
}

std::string read_run_text(const train::RunState& state, const char* flag) {
  std::string text;
  try {
    text = train::load_run_text(state);
  } catch (const ValueError& e) {
    throw ValueError("", e, fmt::format("; the text the model trained on is not there: pass {} to "
                                        "read another", flag));
  }
  if (state.text_differs(text.size(), io::sha256_hex(text))) {
    add_input_note({fmt::format("{} changed since the run trained on it ({} bytes then, {} now)",
                                state.data_source, state.data_bytes, text.size()),
                    "the scores are on the text as it is now, not on the run's splits"});
  }
  return text;
}

namespace {
std::vector<InputNote>& notes() {
  static std::vector<InputNote> held;
  return held;
}
}  // namespace

void add_input_note(InputNote note) { notes().push_back(std::move(note)); }

const std::vector<InputNote>& input_notes() { return notes(); }

namespace {

namespace fs = std::filesystem;

std::string read_json_file(const std::string& path) { return io::read_file(path, io::kMaxJsonBytes); }

// A tokenizer.json, or a folder holding one or GPT-2's vocab.json and merges.txt.
data::TokenizerPtr read_tokenizer(const std::string& path) {
  std::string file = path;
  if (io::file_type_of(path, "the tokenizer") == fs::file_type::directory) {
    file = (fs::path(path) / "tokenizer.json").string();
    if (io::file_type_of(file, "the tokenizer") == fs::file_type::not_found) {
      return std::make_shared<data::BpeTokenizer>(data::BpeTokenizer::from_vocab_and_merges(
          read_json_file((fs::path(path) / "vocab.json").string()),
          io::read_file((fs::path(path) / "merges.txt").string(), io::kMaxJsonBytes)));
    }
  }
  return data::tokenizer_from_json(read_json_file(file));
}

}  // namespace

data::TokenizerPtr load_tokenizer(const std::string& path) {
  try {
    return read_tokenizer(path);
  } catch (const Error& e) {
    throw Error(fmt::format("--tokenizer {}: {}", path, e.what()));
  }
}

}  // namespace tinygpt::cli
