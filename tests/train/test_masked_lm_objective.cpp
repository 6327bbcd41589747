// The masked LM on the Trainer: framed, masked windows, the loss on chosen positions, exact
// replay from the generator's state, and a loss that falls.
#include <catch2/catch.hpp>

#include "masked_text.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/train/objective.hpp"
#include "tinygpt/train/trainer.hpp"

using namespace tinygpt;

TEST_CASE("MaskedLMObjective draws framed windows, masks them and counts the chosen positions",
          "[train][bert]") {
  const testing::MaskedText s(20);
  const data::TextDataset dataset(s.ids, 16, 0.1);
  nn::BertForMaskedLM model(testing::small_bert(s.tok.vocab_size(), 2, 32, 18), 1);
  train::MaskedLMObjective objective(model, dataset, s.masking);
  Generator gen(3);
  const Generator::State start = gen.state();
  objective.draw(data::Split::train, 4, gen);
  CHECK(objective.batch_tokens() == 4 * 18);
  const int64_t chosen = objective.predicted_tokens(0, 4);
  CHECK(chosen >= 4);
  CHECK(objective.predicted_tokens(0, 2) + objective.predicted_tokens(2, 2) == chosen);
  const double whole = objective.loss(0, 4).item();
  const double halves = (objective.loss(0, 2).item() * static_cast<double>(objective.predicted_tokens(0, 2)) +
                         objective.loss(2, 2).item() * static_cast<double>(objective.predicted_tokens(2, 2))) /
                        static_cast<double>(chosen);
  CHECK(whole == Approx(halves).epsilon(1e-5));
  // The same generator state draws the same windows and masks.
  Generator again(0);
  again.set_state(start);
  objective.draw(data::Split::train, 4, again);
  CHECK(again.state() == gen.state());
  CHECK(objective.loss(0, 4).item() == whole);
}

TEST_CASE("a masked LM trained by the Trainer predicts masked characters better",
          "[train][bert][slow]") {
  const testing::MaskedText s(20);
  const data::TextDataset dataset(s.ids, 16, 0.1);
  nn::BertForMaskedLM model(testing::small_bert(s.tok.vocab_size(), 2, 32, 18), 1);
  train::TrainOptions options;
  options.steps = 60;
  options.batch = 8;
  options.lr = 3e-3;
  options.min_lr = 3e-3;
  options.warmup = 5;
  options.eval_iters = 4;
  train::Trainer trainer(std::make_unique<train::MaskedLMObjective>(model, dataset, s.masking), options);
  const double before = trainer.evaluate().val_loss;
  while (!trainer.done()) trainer.step();
  const double after = trainer.evaluate().val_loss;
  INFO("masked val loss " << before << " -> " << after);
  CHECK(after < before - 0.5);
}
