#include "families.hpp"

#include <algorithm>

#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/masked_lm.hpp"

namespace tinygpt::cli {
namespace {

// A config's refusal of the flags' shape, in flag terms.
template <class Validate>
void refuse_in_flag_terms(Validate&& validate) {
  try {
    validate();
  } catch (const ValueError& e) {
    throw UsageError(in_flag_terms(e));
  }
}

// The attention flags come in sets: each pattern's own sizes, and no size without its pattern.
void check_attention_flags(const ModelFlags& m, const CLI::App& cmd) {
  const bool windowed = m.attention == "window" || m.attention == "bigbird";
  if (windowed && m.window == 0) {
    throw UsageError(fmt::format("--attention {} needs --window W (the keys each query sees)",
                                 m.attention));
  }
  if (!windowed && (m.window != 0 || m.global_tokens != 0)) {
    throw UsageError(fmt::format("{} needs --attention window or bigbird",
                                 m.window != 0 ? "--window" : "--global-tokens"));
  }
  if (m.attention == "bigbird" && m.bigbird_block == 0) {
    throw UsageError("--attention bigbird needs --block-size B (the positions of a block)");
  }
  if (m.attention != "bigbird" && (m.bigbird_block != 0 || cmd.count("--random-blocks") != 0)) {
    throw UsageError(fmt::format("{} needs --attention bigbird",
                                 m.bigbird_block != 0 ? "--block-size" : "--random-blocks"));
  }
  if (m.attention == "strided" && m.stride == 0) {
    throw UsageError("--attention strided needs --stride S (the band and the column spacing)");
  }
  if (m.attention != "strided" && m.stride != 0) throw UsageError("--stride needs --attention strided");
  const std::pair<const char*, int64_t> performer_sizes[] = {{"--features", m.features},
                                                             {"--redraw-every", m.redraw_every}};
  for (const auto& size : performer_sizes) {
    if (m.attention != "performer" && size.second != ModelFlags::kNotGiven) {
      throw UsageError(fmt::format("{} needs --attention performer", size.first));
    }
  }
}

// An encoder's attention flags (`arch`'s): the sets above, and full or bigbird only.
void check_encoder_attention(const ModelFlags& m, const CLI::App& cmd, const char* arch) {
  check_attention_flags(m, cmd);
  if (m.attention != "full" && m.attention != "bigbird") {
    throw UsageError(fmt::format("--attention {} is a GPT's; --arch {} does not take it "
                                 "(its encoder takes full or bigbird)", m.attention, arch));
  }
}

Family gpt_family() {
  Family f;
  f.arch = "gpt";
  f.noun = "a GPT";
  f.train_help = "gpt: a causal language model of the text";
  f.bench_help = "gpt: a language model's steps on random tokens of --vocab, or --data's characters";
  f.default_data = data::kToyCorpus;
  f.takes_init_from = true;
  f.own_flags = {"--pos", "--kv-heads", "--attention", "--window", "--global-tokens", "--stride",
                 "--block-size", "--random-blocks", "--no-attention-scale", "--features", "--redraw-every"};
  f.reports_mfu = true;
  f.model_config = [](const ModelFlags& m, uint64_t seed) -> train::ModelConfig { return m.config(0, seed); };
  f.check_shape = [](const ModelFlags& m, const CLI::App& cmd) {
    check_attention_flags(m, cmd);
    refuse_in_flag_terms([&] { m.config(1).validate(); });
  };
  f.flags_of = [](train::Task& task) {
    return ModelFlags::of(task.as<train::LanguageModelTask>().gpt()->config());
  };
  return f;
}

// The defaults the encoder-decoder and the encoder start from: a lower learning rate than the
// demo's (post-LN blocks want it), a longer warmup and fewer heads; the encoder overrides some.
FamilyDefaults non_demo_defaults() {
  FamilyDefaults d;
  d.lr = 2e-3;
  d.warmup = 100;
  d.beta2 = 0.98;
  d.eval_every = 250;
  d.eval_iters = 4;
  d.heads = 4;
  d.steps = 2000;
  d.batch = 32;
  return d;
}

Family encoder_decoder_family() {
  Family f;
  f.arch = "encoder-decoder";
  f.noun = "an encoder-decoder";
  f.train_help =
      "encoder-decoder: a model from source to target of source<TAB>target pairs (--data a file "
      "of them, or builtin:reverse, builtin:sort or builtin:dates; default builtin:reverse), with "
      "its own defaults for the flags not given ({})";
  f.bench_help =
      "encoder-decoder: its steps on random pairs whose source and target fill --block positions "
      "(ms/step, tokens/s, peak RSS, --profile; the model flags --layers, --heads, --d-model, "
      "--block, --dropout)";
  f.default_data = data::kReverseTask;
  f.own_vocabulary = "its pairs' characters";
  // Its encoder's self-attention takes BigBird's pattern, two-sided; its decoder's stays full.
  f.own_flags = {"--cross", "--cross-score", "--attention", "--window", "--global-tokens",
                 "--block-size", "--random-blocks"};
  // Defaults small enough to train in minutes, large enough that builtin:reverse is learnt (the
  // held-out match and the time are measured in docs/SEQ2SEQ.md).
  f.defaults = non_demo_defaults();
  f.defaults.d_model = 128;
  f.defaults.block = 32;
  f.defaults.steps = 1500;
  f.defaults.batch = 64;
  f.bench_data_instead = "random pairs";
  f.bench_min_block = 2;
  f.model_config = [](const ModelFlags& m, uint64_t seed) -> train::ModelConfig {
    return m.encoder_decoder_config(seed);
  };
  f.check_shape = [](const ModelFlags& m, const CLI::App& cmd) {
    check_encoder_attention(m, cmd, "encoder-decoder");
    refuse_in_flag_terms([&] {
      nn::EncoderDecoderConfig c = m.encoder_decoder_config();
      c.vocab_size = 4;  // any vocabulary with the special tokens
      c.validate();
    });
  };
  f.flags_of = [](train::Task& task) {
    return ModelFlags::of(task.as<train::PairTask>().encoder_decoder().config());
  };
  return f;
}

Family encoder_family() {
  Family f;
  f.arch = "encoder";
  f.noun = "an encoder";
  f.train_help =
      "encoder: a bidirectional encoder (BERT) trained as a masked language model of the text "
      "(default builtin:toy-mlm, the toy corpus with echo spans of one length), saved in Hugging "
      "Face BertForMaskedLM's layout, with its own defaults ({})";
  f.bench_help =
      "encoder: a masked LM's steps on random characters, or --data's, in windows of --block "
      "([CLS] and [SEP] added; also --pos, --pre-ln, --mask-prob)";
  // The toy corpus whose echo documents all have one span, so that copy heads can grow
  // (toy_corpus.hpp says why a masked LM needs that).
  f.default_data = data::kToyMlmCorpus;
  f.own_vocabulary = "its text's characters and BERT's specials";
  f.takes_init_from = true;
  // An encoder's attention is bidirectional, full or BigBird's (as an encoder-decoder's encoder
  // runs it), one key/value head per head.
  f.own_flags = {"--pos", "--mask-prob", "--pre-ln", "--attention", "--window", "--global-tokens",
                 "--block-size", "--random-blocks"};
  // A faster rate with a shorter memory of the squared gradients than the encoder-decoder's, and
  // the heads and steps it takes copy heads to grow on builtin:toy-mlm from learned positions
  // on every seed measured (docs/ENCODER.md): with 4 heads some seeds grow none.
  f.defaults = non_demo_defaults();
  f.defaults.heads = 8;
  f.defaults.lr = 5e-3;
  f.defaults.beta2 = 0.95;
  f.defaults.warmup = 200;
  f.defaults.steps = 8000;
  f.model_config = [](const ModelFlags& m, uint64_t seed) -> train::ModelConfig {
    return m.encoder_config(seed);
  };
  f.check_shape = [](const ModelFlags& m, const CLI::App& cmd) {
    check_encoder_attention(m, cmd, "encoder");
    // BigBird's blocks tile the whole sequence, whose [CLS] and [SEP] --block does not count.
    const int64_t positions = m.block + 2;
    if (m.attention == "bigbird" && positions % m.bigbird_block != 0) {
      throw UsageError(fmt::format("--block-size {} does not divide the encoder's {} positions "
                                   "(--block {}, [CLS] and [SEP]) into whole blocks",
                                   m.bigbird_block, positions, m.block));
    }
    if (m.attention == "bigbird" && m.random_blocks > positions / m.bigbird_block) {
      throw UsageError(fmt::format("--random-blocks {} is more than the encoder's {} blocks ({} "
                                   "positions / --block-size {})", m.random_blocks,
                                   positions / m.bigbird_block, positions, m.bigbird_block));
    }
    refuse_in_flag_terms([&] {
      nn::BertConfig c = m.encoder_config().model;
      c.vocab_size = static_cast<int64_t>(data::MaskedLMTokenizer::special_tokens().size()) + 1;  // and a character
      c.validate();
    });
  };
  f.flags_of = [](train::Task& task) {
    train::EncoderTask& encoder = task.as<train::EncoderTask>();
    return ModelFlags::of(train::EncoderConfig{encoder.bert().config(), encoder.mask_probability()});
  };
  return f;
}

bool takes(const Family& family, const std::string& flag) {
  return std::find(family.own_flags.begin(), family.own_flags.end(), flag) != family.own_flags.end();
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> kFamilies = {gpt_family(), encoder_decoder_family(), encoder_family()};
  return kFamilies;
}

const Family& default_family() { return families().front(); }

const Family& family(const std::string& arch) {
  for (const Family& f : families()) {
    if (f.arch == arch) return f;
  }
  throw ValueError(Operation("family"), fmt::format("no model family is called {}", arch));
}

const Family& family_of(const train::Task& task) {
  const std::string kind = task.kind();
  for (const Family& f : families()) {
    if (f.arch == kind) return f;
  }
  return default_family();
}

std::vector<std::string> family_names() {
  std::vector<std::string> names;
  for (const Family& f : families()) names.push_back(f.arch);
  return names;
}

void Family::check(const ModelFlags& flags, const CLI::App& cmd) const {
  check_own_flags(cmd);
  check_shape(flags, cmd);
}

// A flag of another family is named by its first owner: the default family's are "a GPT's flag",
// the others' "need --arch" their family.
void Family::check_own_flags(const CLI::App& cmd) const {
  for (const Family& owner : families()) {
    for (const std::string& flag : owner.own_flags) {
      if (cmd.count(flag) == 0 || takes(*this, flag)) continue;
      if (&owner == &default_family()) {
        throw UsageError(fmt::format("{} is {}'s flag; --arch {} does not take it", flag, owner.noun, arch));
      }
      throw UsageError(fmt::format("{} needs --arch {}", flag, owner.arch));
    }
  }
}

}  // namespace tinygpt::cli
