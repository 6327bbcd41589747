// A refused setting is data (issue 58, item 5): every check of GPTConfig, EncoderDecoderConfig and
// TrainOptions throws a SettingError carrying the setting's name and value, its what() in the
// library's terms; an error's operation is apart from its detail; a program renames the settings
// a message names from those parts, not from the text.
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tinygpt/autograd.hpp"
#include "tinygpt/nn/encoder_decoder.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/train/trainer.hpp"
#include "nn/nn_helpers.hpp"

using namespace tinygpt;
using Catch::Matchers::StartsWith;

namespace {

// A setting spoilt, and the name and value its refusal must carry.
template <class Settings>
struct BadSetting {
  std::string setting, value;
  std::function<void(Settings&)> spoil;
};

// `good` passes validate(); each case of `bad`, applied to it, is refused naming its setting and
// value, the message starting with `operation`.
template <class Settings>
void check_refusals(const Settings& good, const std::string& operation,
                    const std::vector<BadSetting<Settings>>& bad) {
  REQUIRE_NOTHROW(good.validate());
  for (const BadSetting<Settings>& c : bad) {
    INFO(c.setting << " " << c.value);
    Settings settings = good;
    c.spoil(settings);
    bool refused = false;
    try {
      settings.validate();
    } catch (const SettingError& e) {
      refused = true;
      CHECK(e.setting() == c.setting);
      CHECK(e.value() == c.value);
      CHECK(e.operation() == operation);
      CHECK_THAT(e.what(), StartsWith(operation + ": " + e.detail()));
    }
    CHECK(refused);
  }
}

}  // namespace

TEST_CASE("every GPTConfig check names its setting and value", "[errors][settings]") {
  using C = nn::GPTConfig;
  check_refusals<C>(testing::tiny_config(), "GPTConfig", {
      {"vocab_size", "0", [](C& c) { c.vocab_size = 0; }},
      {"block_size", "-1", [](C& c) { c.block_size = -1; }},
      {"n_layer", "0", [](C& c) { c.n_layer = 0; }},
      {"n_head", "0", [](C& c) { c.n_head = 0; }},
      {"n_embd", "0", [](C& c) { c.n_embd = 0; }},
      {"n_embd", "9", [](C& c) { c.n_embd = 9; }},
      {"dropout", "1.5", [](C& c) { c.dropout = 1.5; }},
      {"n_kv_head", "3", [](C& c) { c.n_kv_head = 3; }},
      {"n_embd", "6", [](C& c) {
         c.n_embd = 6;
         c.position_embedding = nn::PositionEmbedding::rope;
       }},
      {"window", "0", [](C& c) { c.attention = AttentionPattern{AttentionPattern::Kind::window, 0, 0, 0}; }},
      {"window", "9", [](C& c) { c.attention = AttentionPattern::sliding_window(9); }},
      {"global_tokens", "-1", [](C& c) { c.attention = AttentionPattern{AttentionPattern::Kind::window, 4, -1, 0}; }},
      {"global_tokens", "2", [](C& c) { c.attention = AttentionPattern{AttentionPattern::Kind::full, 0, 2, 0}; }},
      {"global_tokens", "10", [](C& c) { c.attention = AttentionPattern::sliding_window(4, 10); }},
      {"stride", "0", [](C& c) { c.attention = AttentionPattern{AttentionPattern::Kind::strided, 0, 0, 0}; }},
      {"stride", "10", [](C& c) { c.attention = AttentionPattern::strided_attention(10); }},
      {"bigbird_block", "3", [](C& c) { c.attention = AttentionPattern::bigbird(2, 0, 1, 3, 1); }},
      {"random_blocks", "5", [](C& c) { c.attention = AttentionPattern::bigbird(2, 0, 5, 2, 1); }},
      {"bigbird_block", "0", [](C& c) {
         c.attention = AttentionPattern::bigbird(2, 0, 1, 2, 1);
         c.attention.block = 0;
       }},
      {"random_blocks", "-1", [](C& c) {
         c.attention = AttentionPattern::bigbird(2, 0, 1, 2, 1);
         c.attention.random_blocks = -1;
       }},
      {"window", "0", [](C& c) {
         c.attention = AttentionPattern::bigbird(2, 0, 1, 2, 1);
         c.attention.window = 0;
       }},
      {"position_embedding", "rope", [](C& c) {
         c.attention = AttentionPattern::linear_attention();
         c.position_embedding = nn::PositionEmbedding::rope;
       }},
      {"rope_theta", "0", [](C& c) { c.rope_theta = 0; }},
      {"layer_norm_epsilon", "0", [](C& c) { c.layer_norm_epsilon = 0; }},
  });
}

TEST_CASE("every EncoderDecoderConfig check names its setting and value", "[errors][settings]") {
  using C = nn::EncoderDecoderConfig;
  C good;
  good.vocab_size = 8;
  check_refusals<C>(good, "EncoderDecoderConfig", {
      {"vocab_size", "0", [](C& c) { c.vocab_size = 0; }},
      {"d_model", "0", [](C& c) { c.d_model = 0; }},
      {"encoder_layers", "0", [](C& c) { c.encoder_layers = 0; }},
      {"decoder_layers", "0", [](C& c) { c.decoder_layers = 0; }},
      {"encoder_attention_heads", "0", [](C& c) { c.encoder_attention_heads = 0; }},
      {"decoder_attention_heads", "0", [](C& c) { c.decoder_attention_heads = 0; }},
      {"encoder_ffn_dim", "0", [](C& c) { c.encoder_ffn_dim = 0; }},
      {"decoder_ffn_dim", "0", [](C& c) { c.decoder_ffn_dim = 0; }},
      {"max_position_embeddings", "0", [](C& c) { c.max_position_embeddings = 0; }},
      {"d_model", "130", [](C& c) { c.d_model = 130; }},
      {"d_model", "132", [](C& c) { c.d_model = 132; c.decoder_attention_heads = 8; }},
      {"dropout", "1", [](C& c) { c.dropout = 1; }},
      {"layer_norm_epsilon", "0", [](C& c) { c.layer_norm_epsilon = 0; }},
      {"init_std", "-0.5", [](C& c) { c.init_std = -0.5; }},
      {"pad_token_id", "8", [](C& c) { c.pad_token_id = 8; }},
      {"bos_token_id", "-1", [](C& c) { c.bos_token_id = -1; }},
      {"eos_token_id", "9", [](C& c) { c.eos_token_id = 9; }},
      {"decoder_start_token_id", "8", [](C& c) { c.decoder_start_token_id = 8; }},
  });
}

TEST_CASE("every TrainOptions check names its setting and value", "[errors][settings]") {
  using O = train::TrainOptions;
  check_refusals<O>(O(), "TrainOptions", {
      {"steps", "0", [](O& o) { o.steps = 0; }},
      {"batch", "0", [](O& o) { o.batch = 0; }},
      {"grad_accum", "0", [](O& o) { o.grad_accum = 0; }},
      {"batch", "12", [](O& o) { o.grad_accum = 5; }},
      {"lr", "0", [](O& o) { o.lr = 0; }},
      {"min_lr", "-1", [](O& o) { o.min_lr = -1; }},
      {"min_lr", "0.1", [](O& o) { o.min_lr = 0.1; o.lr = 0.01; }},
      {"warmup", "-1", [](O& o) { o.warmup = -1; }},
      {"lr_decay_steps", "-1", [](O& o) { o.lr_decay_steps = -1; }},
      {"weight_decay", "-0.1", [](O& o) { o.weight_decay = -0.1; }},
      {"beta1", "1", [](O& o) { o.beta1 = 1; }},
      {"beta2", "-0.5", [](O& o) { o.beta2 = -0.5; }},
      {"grad_clip", "-1", [](O& o) { o.grad_clip = -1; }},
      {"optimizer", "'adam'", [](O& o) { o.optimizer = "adam"; }},
      {"eval_every", "0", [](O& o) { o.eval_every = 0; }},
      {"eval_iters", "0", [](O& o) { o.eval_iters = 0; }},
      {"precision", "'f16'", [](O& o) { o.precision = "f16"; }},
  });
}

TEST_CASE("an error keeps its operation apart from its detail, also inside another's message",
          "[errors]") {
  const ValueError raised(Operation("CharTokenizer::encode"), "character 'x' is not in the vocabulary");
  CHECK(raised.operation() == "CharTokenizer::encode");
  CHECK(raised.detail() == "character 'x' is not in the vocabulary");
  CHECK(std::string(raised.what()) == "CharTokenizer::encode: character 'x' is not in the vocabulary");
  CHECK(raised.in_terms() == raised.detail());
  const ValueError wrapped("--prompt: ", raised, "; pick another");
  CHECK(wrapped.operation().empty());
  CHECK(std::string(wrapped.what()) ==
        "--prompt: CharTokenizer::encode: character 'x' is not in the vocabulary; pick another");
  CHECK(wrapped.in_terms() == "--prompt: character 'x' is not in the vocabulary; pick another");
  const Error plain("no operation: a plain message");
  CHECK(plain.operation().empty());
  CHECK(plain.detail() == plain.what());
  CHECK(plain.in_terms() == plain.what());
}

// The renaming reads the parts: a setting named in the words of the message ("lr" below, or a
// setting's name that no part marks) stays as it is, whatever the wording around it.
TEST_CASE("a program renames the settings an error marks, not words that look like them",
          "[errors][settings]") {
  const SettingError e(Operation("TrainOptions"),
                       {named("min_lr", 0.5), " is above ", named("lr", 0.25),
                        ": the learning rate decays from lr down to min_lr, as batch 4 does not"});
  CHECK(e.setting() == "min_lr");
  CHECK(e.value() == "0.5");
  CHECK(std::string(e.what()) == "TrainOptions: min_lr 0.5 is above lr 0.25: the learning rate decays "
                                 "from lr down to min_lr, as batch 4 does not");
  const auto flag = [](const std::string& setting) { return "--" + setting; };
  CHECK(e.in_terms(flag) ==
        "--min_lr 0.5 is above --lr 0.25: the learning rate decays from lr down to min_lr, as batch 4 "
        "does not");
  const ValueError wrapped("text.txt: ", e);
  CHECK(wrapped.in_terms(flag) == "text.txt: " + e.in_terms(flag));
}
