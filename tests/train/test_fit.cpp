// train::fit on a model that is not the library's: a bigram causal LM registered by type, trained
// through the run (cadence, saves, stop and exact resume, observers' log fields), and loaded back
// by the model-type picker.

#include <catch2/catch.hpp>

#include "file_bytes.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/nn/embedding.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/fit.hpp"
#include "tinygpt/train/log_records.hpp"

using namespace tinygpt;
using namespace tinygpt::train;
using tinygpt::testing::ScratchDir;
using Catch::Matchers::Contains;

namespace {

constexpr const char* kBigramType = "test-bigram";

// logits(t) = table[t]: the next token from the current one alone, no attention.
class Bigram : public nn::CausalLM {
 public:
  Bigram(int64_t vocab_size, int64_t block_size, uint64_t seed)
      : vocab_size_(vocab_size), block_size_(block_size), noise_(seed) {
    Generator init(seed);
    table = register_module("table", std::make_shared<nn::Embedding>(vocab_size, vocab_size, init));
  }
  Tensor logits(const Tensor& tokens) override { return table->forward(tokens); }
  nn::CausalLMShape shape() const override { return {vocab_size_, block_size_, 0, 0}; }
  Generator& dropout_generator() override { return noise_; }
  void set_keep_attention_weights(bool) override {}
  std::vector<Tensor> attention_weights() const override { return {}; }
  std::string config_json() const override {
    return nlohmann::json{{"model_type", kBigramType}, {"vocab_size", vocab_size_}, {"block_size", block_size_}}
               .dump(2) + "\n";
  }

  std::shared_ptr<nn::Embedding> table;

 private:
  int64_t vocab_size_, block_size_;
  Generator noise_;
};

void register_bigram() {
  register_causal_lm(kBigramType, [](const nlohmann::json& c, uint64_t seed) {
    return std::make_unique<Bigram>(c.at("vocab_size").get<int64_t>(), c.at("block_size").get<int64_t>(), seed);
  });
}

const nlohmann::json kConfig = {{"model_type", kBigramType}, {"block_size", 8}};

TrainOptions options(int64_t steps, int64_t eval_every) {
  TrainOptions o;
  o.steps = steps;
  o.batch = 4;
  o.warmup = 2;
  o.lr_decay_steps = 12;
  o.eval_every = eval_every;
  o.eval_iters = 1;
  return o;
}

// Records what fit tells its observers, and adds a field to every evaluation's log record.
struct Recorder : FitObserver {
  std::vector<int64_t> evals, saves;
  int64_t steps = 0;
  void on_step(Run&, const StepStats&) override { ++steps; }
  nlohmann::json eval_fields(Run& run) override { return {{"probe", run.steps_done() * 10}}; }
  void on_eval(Run&, const EvalStats& e) override { evals.push_back(e.step); }
  void on_save(Run& run) override { saves.push_back(run.saved_step()); }
};

}  // namespace

TEST_CASE("fit evaluates every eval_every steps and at the end, saves after each, and logs the "
          "observers' fields", "[train][fit]") {
  register_bigram();
  ScratchDir dir;
  Run run = Run::start(dir.file("run"), kConfig, options(7, 3), data::kToyCorpus);
  CHECK(run.task().kind() == kBigramType);
  Recorder recorder;
  const FitResult result = fit(run, {&recorder});
  CHECK(result.stopped_by == 0);
  CHECK(result.first_step == 0);
  CHECK(recorder.steps == 7);
  CHECK(recorder.evals == std::vector<int64_t>{3, 6, 7});
  CHECK(recorder.saves == std::vector<int64_t>{3, 6, 7});
  REQUIRE(result.last_eval);
  CHECK(result.last_eval->step == 7);
  int evaluations = 0;
  const LogRecords log = LogRecords::read(run.log_path());
  for (const nlohmann::json& r : log.records()) {
    if (!r.contains("val_loss")) continue;
    ++evaluations;
    CHECK(r.at("probe").get<int64_t>() == r.at("step").get<int64_t>() * 10);
  }
  CHECK(evaluations == 3);
}

TEST_CASE("a stop request saves a checkpoint that resumes byte-identical to a run never stopped",
          "[train][fit][resume]") {
  register_bigram();
  ScratchDir dir;
  {
    Run straight = Run::start(dir.file("straight"), kConfig, options(8, 3), data::kToyCorpus);
    fit(straight, {});
  }
  {
    Run stopped = Run::start(dir.file("stopped"), kConfig, options(8, 3), data::kToyCorpus);
    int asked = 0;
    const FitResult r = fit(stopped, {}, [&] { return ++asked == 6 ? 15 : 0; });  // after step 5
    CHECK(r.stopped_by == 15);
    CHECK(r.saved_at_stop);
    CHECK(stopped.saved_step() == 5);
  }
  Run resumed = Run::resume(dir.file("stopped"));
  CHECK(resumed.steps_done() == 5);
  CHECK(fit(resumed, {}).first_step == 5);
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json", "tokenizer.json"}) {
    INFO(file);
    CHECK(testing::read_bytes(dir.file("stopped") + "/" + file) == testing::read_bytes(dir.file("straight") + "/" + file));
  }
}

TEST_CASE("a stop request before the first step saves nothing", "[train][fit]") {
  register_bigram();
  ScratchDir dir;
  Run run = Run::start(dir.file("run"), kConfig, options(4, 2), data::kToyCorpus);
  Recorder recorder;
  const FitResult r = fit(run, {&recorder}, [] { return 2; });
  CHECK(r.stopped_by == 2);
  CHECK_FALSE(r.saved_at_stop);
  CHECK(recorder.steps == 0);
  CHECK_FALSE(has_checkpoint(dir.file("run")));
}

TEST_CASE("a registered model type loads back by the picker; an unknown one is refused by name",
          "[train][fit][task]") {
  register_bigram();
  ScratchDir dir;
  {
    Run run = Run::start(dir.file("run"), kConfig, options(2, 2), data::kToyCorpus);
    fit(run, {});
  }
  const std::unique_ptr<Task> loaded = load_task(dir.file("run"));
  REQUIRE(loaded->is<LanguageModelTask>());
  CHECK(loaded->as<LanguageModelTask>().causal_lm().shape().block_size == 8);
  CHECK(dynamic_cast<Bigram*>(&loaded->model()) != nullptr);
  CHECK_THROWS_WITH(load_model(dir.file("run")), Contains(kBigramType) && Contains("not a GPT"));
  Run again = Run::resume(dir.file("run"), [] { ResumeChanges c; c.steps = 3; return c; }());
  CHECK(again.task().as<LanguageModelTask>().gpt() == nullptr);
  CHECK_THROWS_WITH(again.task().as<PairTask>(), Contains(kBigramType) && Contains("not an encoder-decoder"));

  const nlohmann::json unknown = {{"model_type", "no-such-model"}, {"block_size", 8}};
  CHECK_THROWS_WITH(Run::start(dir.file("other"), unknown, options(2, 2), data::kToyCorpus),
                    Contains("no-such-model") && Contains("register_causal_lm"));
  CHECK_THROWS_WITH(register_causal_lm("gpt2", [](const nlohmann::json&, uint64_t) { return nullptr; }),
                    Contains("gpt2"));
}

TEST_CASE("a registered model's training memory is measured: its parameters' copies and one row's "
          "activations times the rows", "[train][task][memory]") {
  register_bigram();
  Bigram model(20, 8, 1);
  const MemoryEstimate one = measure_training_memory(model, 1, "adamw");
  const MemoryEstimate four = measure_training_memory(model, 4, "adamw");
  CHECK(one.parameters == model.num_parameters());
  CHECK(one.model_bytes == 16.0 * static_cast<double>(model.num_parameters()));
  CHECK(one.activation_bytes > 0.0);
  CHECK(four.activation_bytes == 4.0 * one.activation_bytes);
  CHECK(measure_training_memory(model, 1, "sgd").model_bytes == 8.0 * static_cast<double>(model.num_parameters()));
  // The row leaves no gradients behind, and the model in the mode it was in.
  for (const Tensor& p : model.parameters()) CHECK_FALSE(p.grad().defined());
  CHECK(model.is_training());
  // A run's task says it too, so a step that cannot fit is refused before training.
  ScratchDir dir;
  Run run = Run::start(dir.file("run"), kConfig, options(1, 1), data::kToyCorpus);
  const std::optional<MemoryEstimate> estimate = run.task().training_memory(4, run.options());
  REQUIRE(estimate);
  CHECK(estimate->parameters == run.task().model().num_parameters());
  CHECK(estimate->activation_bytes > 0.0);
}
