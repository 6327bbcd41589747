// nn::generate: the key/value cache is an optimisation only. With it and without it, the same
// model, prompt and options give the same token ids, including past the context length, where
// both restart their window by the same rule.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/nn/sampler.hpp"

using namespace tinygpt;

namespace {

// A random model whose weights are large enough (std 0.3, not GPT-2's 0.02) that its next-token
// distributions are far from uniform: sampling then depends on what the model computes, and a
// difference between the two paths would show.
std::unique_ptr<nn::GPT> random_model(int64_t block, uint64_t seed) {
  nn::GPTConfig config;
  config.vocab_size = 11;
  config.block_size = block;
  config.n_layer = 2;
  config.n_head = 2;
  config.n_embd = 16;
  auto model = std::make_unique<nn::GPT>(config, seed);
  Generator gen(seed + 100);
  for (auto& [name, p] : model->named_parameters()) {
    float* values = Tensor(p).data<float>();
    for (int64_t i = 0; i < p.numel(); ++i) values[i] = static_cast<float>(0.3 * gen.normal());
  }
  return model;
}

std::vector<int64_t> generate_ids(nn::GPT& model, const std::vector<int64_t>& prompt,
                                  nn::SampleOptions options, bool use_cache) {
  options.use_cache = use_cache;
  std::vector<int64_t> streamed;
  const std::vector<int64_t> ids =
      nn::generate(model, prompt, options, [&](int64_t id) { streamed.push_back(id); });
  CHECK(streamed == ids);  // the callback sees every id, in order
  return ids;
}

}  // namespace

TEST_CASE("generate gives the same ids with and without the KV cache", "[sample]") {
  const int64_t block = GENERATE(8, 5);
  const auto model = random_model(block, 3);
  const std::vector<std::vector<int64_t>> prompts = {
      {4}, {1, 2, 3}, {0, 9, 9, 2, 7, 1, 5, 3, 8, 6, 10, 2}};  // the last is longer than block
  int64_t differing_settings = 0;
  std::vector<int64_t> previous;
  for (const auto& prompt : prompts) {
    for (const uint64_t seed : {1u, 2u, 77u}) {
      for (const double temperature : {0.0, 0.8, 1.0}) {
        for (const int64_t top_k : {0, 1, 3, 50}) {
          nn::SampleOptions options;
          options.tokens = 4 * block + 3;  // restarts the window several times
          options.seed = seed;
          options.temperature = temperature;
          options.top_k = top_k;
          CAPTURE(block, prompt, seed, temperature, top_k);
          const std::vector<int64_t> cached = generate_ids(*model, prompt, options, true);
          CHECK(cached.size() == static_cast<size_t>(options.tokens));
          CHECK(cached == generate_ids(*model, prompt, options, false));
          differing_settings += cached != previous;
          previous = cached;
        }
      }
    }
  }
  // The settings matter (the comparison is not between two constant outputs).
  CHECK(differing_settings > 50);
}

TEST_CASE("generate past the context of a 1- or 2-token model", "[sample]") {
  // With a context of 1 the restart rule keeps the newest token (half of 1 would be none).
  const int64_t block = GENERATE(1, 2);
  const auto model = random_model(block, 5);
  nn::SampleOptions options;
  options.tokens = 12;
  options.temperature = 0.9;
  for (const std::vector<int64_t>& prompt : {std::vector<int64_t>{3}, {3, 4, 5}}) {
    CAPTURE(block, prompt);
    const std::vector<int64_t> cached = generate_ids(*model, prompt, options, true);
    CHECK(cached.size() == 12);
    CHECK(cached == generate_ids(*model, prompt, options, false));
  }
}

TEST_CASE("generate of zero tokens returns no ids", "[sample]") {
  const auto model = random_model(8, 1);
  nn::SampleOptions options;
  options.tokens = 0;
  for (const bool use_cache : {true, false}) CHECK(generate_ids(*model, {1, 2}, options, use_cache).empty());
}

TEST_CASE("generate with skip_leading drops the leading run of that token and still returns as many",
          "[sample]") {
  const auto model = random_model(8, 3);
  nn::SampleOptions options;
  options.temperature = GENERATE(0.0, 0.9);
  options.tokens = 10 + 16;
  const std::vector<int64_t> prompt{2};
  // The skipped tokens go into the window and use their random draws, so the text after them is
  // the plain run's text after its leading run.
  const std::vector<int64_t> plain = generate_ids(*model, prompt, options, true);
  const int64_t skip = plain.front();
  const auto run = std::find_if(plain.begin(), plain.end(), [&](int64_t id) { return id != skip; }) - plain.begin();
  REQUIRE(run <= 8);
  options.tokens = 10;
  options.skip_leading = skip;
  CAPTURE(options.temperature, plain, run);
  for (const bool use_cache : {true, false}) {
    const std::vector<int64_t> skipped = generate_ids(*model, prompt, options, use_cache);
    CHECK(skipped == std::vector<int64_t>(plain.begin() + run, plain.begin() + run + 10));
    CHECK(skipped.front() != skip);
  }
}

TEST_CASE("next_logits is forward's last position, with and without the KV cache", "[sample]") {
  const auto model = random_model(8, 5);
  model->eval();
  const Tensor prompt = Tensor::from_ids({3, 1, 4, 1, 5}, {1, 5});
  const std::vector<double> all = model->forward(prompt).to_vector();
  const std::vector<double> last(all.end() - 11, all.end());
  std::vector<nn::KVCache> cache = model->make_cache();
  model->next_logits(Tensor::from_ids({3, 1, 4, 1}, {1, 4}), &cache);
  const Tensor whole = model->next_logits(prompt), cached = model->next_logits(Tensor::from_ids({5}, {1, 1}), &cache);
  CHECK(whole.shape() == Shape{1, 1, 11});
  // The head's product of one row may sum in another order than that of five: equal to rounding.
  for (size_t i = 0; i < last.size(); ++i) {
    CHECK(whole.to_vector()[i] == Approx(last[i]).margin(1e-5));
    CHECK(cached.to_vector()[i] == Approx(last[i]).margin(1e-5));
  }
}

TEST_CASE("generation in bf16 reads weights rounded once, within bf16's rounding of f32", "[sample][bf16]") {
  const auto model = random_model(8, 5);
  model->eval();
  NoGradGuard no_grad;
  const Tensor prompt = Tensor::from_ids({3, 1, 4, 1, 5}, {1, 5});
  std::vector<nn::KVCache> cache = model->make_cache();
  model->next_logits(Tensor::from_ids({3, 1, 4, 1}, {1, 4}), &cache);
  const std::vector<double> f32 = model->next_logits(Tensor::from_ids({5}, {1, 1}), &cache).to_vector();

  model->set_generation_precision(Precision::bf16);
  CHECK(model->generation_precision() == Precision::bf16);
  cache = model->make_cache();
  model->next_logits(Tensor::from_ids({3, 1, 4, 1}, {1, 4}), &cache);
  const std::vector<double> bf16 = model->next_logits(Tensor::from_ids({5}, {1, 1}), &cache).to_vector();
  size_t differs = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    CHECK(bf16[i] == Approx(f32[i]).margin(0.05 * (std::abs(f32[i]) + 1.0)));
    differs += bf16[i] != f32[i] ? 1 : 0;
  }
  CHECK(differs > 0);  // the one-position step did run on the rounded weights
  model->set_generation_precision(Precision::f32);  // drops the copies: f32 again, to the bit
  cache = model->make_cache();
  model->next_logits(Tensor::from_ids({3, 1, 4, 1}, {1, 4}), &cache);
  CHECK(model->next_logits(Tensor::from_ids({5}, {1, 1}), &cache).to_vector() == f32);

  // The one-position step reads every weight matrix from its rounded copy, the attention's packed
  // q, k, v projection too: changing the f32 matrices once the prompt is cached changes nothing.
  model->set_generation_precision(Precision::bf16);
  const auto step_after_prompt = [&](bool change_f32_weights) {
    cache = model->make_cache();
    model->next_logits(Tensor::from_ids({3, 1, 4, 1}, {1, 4}), &cache);
    for (auto& [name, p] : model->named_parameters()) {
      if (!change_f32_weights || p.ndim() != 2 || name.rfind("transformer.wte", 0) == 0 ||
          name.rfind("transformer.wpe", 0) == 0) {
        continue;  // the embeddings are looked up in f32
      }
      INFO(name);
      float* values = Tensor(p).data<float>();
      for (int64_t i = 0; i < p.numel(); ++i) values[i] += 1.0f;
    }
    return model->next_logits(Tensor::from_ids({5}, {1, 1}), &cache).to_vector();
  };
  const std::vector<double> rounded = step_after_prompt(false);
  CHECK(rounded == bf16);
  CHECK(step_after_prompt(true) == rounded);
}
