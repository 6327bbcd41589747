// An encoder-decoder trained by the same machinery as a GPT: micro-batches weighed by predicted
// tokens equal one batch, a run saved and resumed ends byte-identical, and its checkpoint loads
// back with BART-style names and config.json.
#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_helpers.hpp"
#include "file_bytes.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/train/run.hpp"
#include "weights_close.hpp"

using namespace tinygpt;
using namespace tinygpt::train;
using tinygpt::testing::ScratchDir;
using tinygpt::testing::train_to_end;

namespace {

nn::EncoderDecoderConfig small_config() {
  nn::EncoderDecoderConfig c;
  c.d_model = 16;
  c.encoder_layers = c.decoder_layers = 1;
  c.encoder_attention_heads = c.decoder_attention_heads = 2;
  c.encoder_ffn_dim = c.decoder_ffn_dim = 32;
  c.max_position_embeddings = 20;
  c.dropout = 0.1;  // so that the dropout generator's state matters
  return c;
}

TrainOptions seq2seq_options(int64_t steps) {
  TrainOptions o;
  o.steps = steps;
  o.batch = 8;
  o.warmup = 2;
  o.lr = 3e-3;
  o.lr_decay_steps = 12;
  o.eval_every = 3;
  o.eval_iters = 1;
  return o;
}


}  // namespace

TEST_CASE("encoder-decoder micro-batches weighed by predicted tokens match one batch", "[train][seq2seq][grad_accum]") {
  const std::string all = data::load_text(data::kSortTask);
  size_t end = 0;
  for (int line = 0; line < 1000; ++line) end = all.find('\n', end) + 1;
  const std::string text = all.substr(0, end);  // the first 1000 pairs
  const auto pairs = data::parse_pairs(text, "sort");
  const data::CharTokenizer tokenizer = data::fit_pair_tokenizer(pairs);
  const data::PairDataset dataset(pairs, tokenizer, 20, 0.1, "sort");
  nn::EncoderDecoderConfig config = small_config();
  config.dropout = 0.0;
  config.vocab_size = tokenizer.vocab_size();
  const auto train = [&](int64_t grad_accum) {
    nn::EncoderDecoder model(config, 3);
    TrainOptions options = seq2seq_options(10);
    options.grad_accum = grad_accum;
    Trainer trainer(std::make_unique<PairObjective>(model, dataset), options);
    std::vector<double> losses;
    while (!trainer.done()) losses.push_back(trainer.step().loss);
    return std::make_pair(model.state_dict(), losses);
  };
  const auto [whole, whole_losses] = train(1);
  for (const int64_t n : {2, 4}) {
    INFO("grad_accum " << n);
    const auto [split, losses] = train(n);
    for (size_t i = 0; i < losses.size(); ++i) CHECK(std::abs(losses[i] - whole_losses[i]) < 1e-5 * whole_losses[i]);
    const testing::WeightsDiff diff = testing::compare_weights(split, whole);
    INFO("worst tensor " << diff.worst_name << ": " << diff.worst_relative);
    CHECK(diff.worst_relative < 1e-6);
  }
}

TEST_CASE("an encoder-decoder run saved and resumed ends byte-identical to one never interrupted",
          "[train][seq2seq][resume]") {
  ScratchDir dir;
  {
    Run straight = Run::start(dir.file("straight"), small_config(), seq2seq_options(6), data::kReverseTask);
    train_to_end(straight);
  }
  {
    Run first = Run::start(dir.file("resumed"), small_config(), seq2seq_options(3), data::kReverseTask);
    train_to_end(first);
  }
  ResumeChanges more;
  more.steps = 6;
  Run resumed = Run::resume(dir.file("resumed"), more);
  REQUIRE(resumed.task().is<PairTask>());
  CHECK(resumed.task().kind() == "encoder-decoder");
  train_to_end(resumed);
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    INFO(file);
    CHECK(testing::read_bytes(dir.file("resumed") + "/" + file) == testing::read_bytes(dir.file("straight") + "/" + file));
  }
  CHECK_THROWS_WITH(resumed.task().as<LanguageModelTask>(),
                    Catch::Contains("encoder-decoder") && Catch::Contains("not a language model"));
}

TEST_CASE("an encoder-decoder checkpoint loads back and its config.json is strict", "[train][seq2seq][checkpoint]") {
  ScratchDir dir;
  const std::string out = dir.file("run");
  {
    Run run = Run::start(out, small_config(), seq2seq_options(1), data::kDatesTask);
    train_to_end(run);
  }
  const std::unique_ptr<Task> loaded_task = load_task(out);
  REQUIRE(loaded_task->is<PairTask>());
  nn::EncoderDecoder& loaded = loaded_task->as<PairTask>().encoder_decoder();
  CHECK(loaded.config().d_model == 16);
  CHECK(loaded.config().eos_token_id == data::kEosId);
  CHECK(dynamic_cast<const data::CharTokenizer&>(loaded_task->tokenizer()).specials() == data::pair_specials());
  CHECK_THROWS_WITH(load_model(out), Catch::Contains("is an encoder-decoder, not a GPT"));
  Run again = Run::resume(out, [] { ResumeChanges c; c.steps = 2; return c; }());
  const nn::NamedTensors saved = loaded.state_dict(), live = again.task().model().state_dict();
  REQUIRE(saved.size() == live.size());
  for (size_t i = 0; i < saved.size(); ++i) CHECK(saved[i].second.to_vector() == live[i].second.to_vector());

  nlohmann::json config = nlohmann::json::parse(config_to_json(loaded.config()));
  CHECK(encoder_decoder_config_from_json(config.dump(), "c.json").decoder_ffn_dim == 32);
  auto refused = [&](const char* key, const nlohmann::json& value, const std::string& fragment) {
    nlohmann::json changed = config;
    changed[key] = value;
    CHECK_THROWS_WITH(encoder_decoder_config_from_json(changed.dump(), "c.json"),
                      Catch::Contains("c.json") && Catch::Contains(fragment));
  };
  refused("normalize_before", false, "normalize_before is false");
  refused("scale_embedding", true, "scale_embedding is true");
  refused("layernorm_embedding_typo", 1, "unknown key 'layernorm_embedding_typo'");
  refused("eos_token_id", 99, "eos_token_id 99 is outside the vocabulary");
  refused("attention_dropout", 0.3, "attention_dropout differs from dropout");
}
