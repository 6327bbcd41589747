// The masked LM's held-out scores: the same numbers twice under the fixed masking, and those of a
// model that knows nothing (every token equally likely): loss log V, pseudo-perplexity V.
#include <catch2/catch.hpp>

#include <cmath>

#include "masked_text.hpp"
#include "tinygpt/train/masked_lm_eval.hpp"

using namespace tinygpt;

TEST_CASE("score_masked_lm gives the same numbers twice and counts the masked positions", "[train][bert]") {
  const testing::MaskedText s(10);
  const data::TextDataset dataset(s.ids, 8, 0.2);
  nn::BertForMaskedLM model(testing::small_bert(s.tok.vocab_size(), 1, 16, 10), 2);
  const train::MaskedLMScore a = train::score_masked_lm(model, dataset, data::Split::val, s.masking, 4);
  const train::MaskedLMScore b = train::score_masked_lm(model, dataset, data::Split::val, s.masking, 7);
  CHECK(a.windows == dataset.num_windows(data::Split::val));
  CHECK(a.masked >= a.windows);  // every row predicts something
  CHECK(a.masked == b.masked);  // the masking does not depend on the batch
  CHECK(a.loss == Approx(b.loss).epsilon(1e-6));  // the products' sums may round otherwise
  CHECK(a.accuracy == b.accuracy);
  CHECK(a.accuracy >= 0.0);
  CHECK(a.accuracy <= 1.0);
  const train::MaskedLMScore other = train::score_masked_lm(model, dataset, data::Split::val, s.masking, 4, 9);
  CHECK(other.masked != a.masked);
}

TEST_CASE("a model whose every distribution is uniform scores log V and pseudo-perplexity V", "[train][bert]") {
  const testing::MaskedText s(10);
  const data::TextDataset dataset(s.ids, 8, 0.2);
  nn::BertForMaskedLM model(testing::small_bert(s.tok.vocab_size(), 1, 16, 10), 2);
  // A zero decoder (the tied word embeddings) and bias: every logit 0.
  for (auto& [name, tensor] : model.state_dict()) {
    if (name == "bert.embeddings.word_embeddings.weight" || name == "cls.predictions.bias") {
      float* values = tensor.data<float>();
      for (int64_t i = 0; i < tensor.numel(); ++i) values[i] = 0.0f;
    }
  }
  const double v = static_cast<double>(s.tok.vocab_size());
  const train::MaskedLMScore score = train::score_masked_lm(model, dataset, data::Split::val, s.masking, 4);
  CHECK(score.loss == Approx(std::log(v)).epsilon(1e-6));
  CHECK(train::pseudo_perplexity(model, dataset, data::Split::val, 3) == Approx(v).epsilon(1e-6));
  CHECK_THROWS_AS(train::pseudo_perplexity(model, data::TextDataset(s.ids, 8, 0.0), data::Split::val, 3), ValueError);
}
