// A small encoder-decoder assembled outside the tinygpt tree from the installed package's modules
// (a shared embedding, an EncoderLayer, a DecoderLayer with its cross-attention), gradient-checked
// in float64, then trained on the built-in reversal task by tinygpt's own Trainer through an
// Objective written here. Exits non-zero unless the gradcheck passes and the held-out loss falls
// below half its start (3.5 -> 1.1 in 600 steps, 2 s).
#include <fmt/format.h>

#include <memory>

#include "tinygpt/autograd.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/pairs.hpp"
#include "tinygpt/nn.hpp"
#include "tinygpt/train.hpp"

using tinygpt::Tensor;
namespace nn = tinygpt::nn;
namespace data = tinygpt::data;

// One encoder layer, one decoder layer, learned positions, the head tied to the embedding.
class TinySeq2Seq : public nn::Module {
 public:
  explicit TinySeq2Seq(const nn::EncoderDecoderConfig& c, tinygpt::Generator& gen)
      : noise_(std::make_shared<tinygpt::Generator>(1)) {
    embed = register_module("embed", std::make_shared<nn::Embedding>(c.vocab_size, c.d_model, gen));
    positions = register_module("positions", std::make_shared<nn::Embedding>(c.max_position_embeddings, c.d_model, gen));
    encoder = register_module("encoder", std::make_shared<nn::EncoderLayer>(c, gen, noise_));
    decoder = register_module("decoder", std::make_shared<nn::DecoderLayer>(c, gen, noise_));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(c.d_model));
    for (Tensor p : {embed->weight, positions->weight}) p.copy_(p * 0.1);  // N(0, 1): too loud
  }

  // source (B,S) with lengths, decoder inputs (B,T) -> logits (B,T,V)
  Tensor forward(const Tensor& source, const std::vector<int64_t>& lengths, const Tensor& inputs) {
    const Tensor memory = encoder->forward(embed_at(source), lengths);      // (B,S,C)
    const Tensor y = decoder->forward(embed_at(inputs), memory, lengths);   // (B,T,C)
    return tinygpt::matmul(norm->forward(y), embed->weight, false, true);  // (B,T,V)
  }

  std::shared_ptr<nn::Embedding> embed, positions;
  std::shared_ptr<nn::EncoderLayer> encoder;
  std::shared_ptr<nn::DecoderLayer> decoder;
  std::shared_ptr<nn::LayerNorm> norm;

 private:
  Tensor embed_at(const Tensor& ids) {  // token + position embeddings (B,T,C)
    std::vector<int64_t> at(static_cast<size_t>(ids.size(1)));
    for (size_t i = 0; i < at.size(); ++i) at[i] = static_cast<int64_t>(i);
    return embed->forward(ids) + positions->forward(Tensor::from_ids(at, {ids.size(1)}));
  }
  std::shared_ptr<tinygpt::Generator> noise_;
};

// What tinygpt's Trainer needs of a model it did not write: draw a batch, score rows of it.
class PairsObjective : public tinygpt::train::Objective {
 public:
  PairsObjective(TinySeq2Seq& model, const data::PairDataset& pairs) : model_(model), pairs_(pairs) {}
  nn::Module& model() override { return model_; }
  tinygpt::Generator& dropout_generator() override { return dropout_; }
  void draw(data::Split split, int64_t rows, tinygpt::Generator& gen) override {
    batch_ = pairs_.sample_batch(split, rows, gen);
  }
  Tensor loss(int64_t first, int64_t count) override {
    const auto rows = [&](const Tensor& x) { return tinygpt::narrow(x, 0, first, count); };
    const std::vector<int64_t> lengths(batch_.source_lengths.begin() + first,
                                       batch_.source_lengths.begin() + first + count);
    return tinygpt::cross_entropy(model_.forward(rows(batch_.source), lengths, rows(batch_.inputs)),
                                  rows(batch_.targets));
  }
  int64_t predicted_tokens(int64_t first, int64_t count) const override {
    int64_t n = 0;
    const std::vector<double> targets = tinygpt::narrow(batch_.targets, 0, first, count).to_vector();
    for (const double t : targets) n += t != -100;
    return n;
  }
  int64_t batch_tokens() const override { return predicted_tokens(0, batch_.targets.size(0)); }
  bool has(data::Split split) const override { return pairs_.size(split) > 0; }

 private:
  TinySeq2Seq& model_;
  const data::PairDataset& pairs_;
  data::PairBatch batch_;
  tinygpt::Generator dropout_{2};
};

int main() {
  const auto pairs = data::parse_pairs(data::load_text(data::kReverseTask), "reverse");
  const data::CharTokenizer tokenizer = data::fit_pair_tokenizer(pairs);
  const data::PairDataset dataset(pairs, tokenizer, 20, 0.1, "reverse");
  nn::EncoderDecoderConfig config;
  config.vocab_size = tokenizer.vocab_size();
  config.d_model = 32;
  config.encoder_attention_heads = config.decoder_attention_heads = 4;
  config.encoder_ffn_dim = config.decoder_ffn_dim = 64;
  config.max_position_embeddings = 20;
  tinygpt::Generator gen(5);

  {  // the whole model's loss against finite differences, in float64, on two pairs, at width 8
    nn::EncoderDecoderConfig narrow = config;
    narrow.d_model = 8;
    narrow.encoder_attention_heads = narrow.decoder_attention_heads = 2;
    narrow.encoder_ffn_dim = narrow.decoder_ffn_dim = 16;
    TinySeq2Seq small(narrow, gen);
    small.to(tinygpt::DType::f64);
    const data::PairBatch b = dataset.batch(data::Split::train, 0, 2);
    const auto check = tinygpt::gradcheck(
        [&](const std::vector<Tensor>&) {
          return tinygpt::cross_entropy(small.forward(b.source, b.source_lengths, b.inputs), b.targets);
        },
        small.parameters());
    fmt::print("gradcheck TinySeq2Seq: {}\n", check.ok ? "ok" : check.message());
    if (!check.ok) return 1;
  }

  TinySeq2Seq model(config, gen);
  tinygpt::train::TrainOptions options;
  options.steps = 600;
  options.batch = 16;
  options.lr = 3e-3;
  options.warmup = 10;
  options.eval_iters = 2;
  tinygpt::train::Trainer trainer(std::make_unique<PairsObjective>(model, dataset), options);
  const double before = trainer.evaluate().val_loss;
  while (!trainer.done()) trainer.step();
  const double after = trainer.evaluate().val_loss;
  fmt::print("held-out loss {:.3f} -> {:.3f} after {} steps\n", before, after, options.steps);
  const bool learned = after < 0.5 * before;
  fmt::print("Trainer on TinySeq2Seq: {}\n", learned ? "ok" : "did not learn");
  return learned ? 0 : 1;
}
