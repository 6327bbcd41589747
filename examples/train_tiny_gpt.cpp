// Training a GPT from C++ in a few lines: the built-in toy corpus, a 2-layer model, AdamW.
#include <fmt/format.h>

#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/data/toy_corpus.hpp"
#include "tinygpt/train/trainer.hpp"

using namespace tinygpt;

int main() {
  set_flush_denormals(true);  // as the CLI does: sharp attention makes subnormals, slow on Intel
  const std::string text = data::generate_toy_corpus(/*seed=*/0, /*num_chars=*/200'000);
  const data::CharTokenizer tokenizer = data::CharTokenizer::fit(text);
  const data::TextDataset dataset(tokenizer.encode(text), /*block_size=*/64);

  nn::GPTConfig config;
  config.vocab_size = tokenizer.vocab_size();
  config.n_layer = 2;
  config.n_head = 4;
  config.n_embd = 64;
  nn::GPT model(config, /*seed=*/1);

  train::TrainOptions options;
  options.steps = 200;
  options.batch = 16;
  options.warmup = 20;
  train::Trainer trainer(model, dataset, options);
  while (!trainer.done()) {
    const train::StepStats s = trainer.step();
    if (s.step % 20 == 0) fmt::print("step {:>3}  loss {:.4f}  lr {:.2e}\n", s.step, s.loss, s.lr);
  }
  const train::EvalStats e = trainer.evaluate();
  fmt::print("train loss {:.4f}, val loss {:.4f}\n", e.train_loss, e.val_loss);
}
