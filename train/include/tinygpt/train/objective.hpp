#pragma once
// What a Trainer optimises: a model and the data its loss is measured on. The Trainer draws a
// step's batch through it, splits the batch into micro-batches (grad_accum x ranks) by rows, and
// weighs each micro-batch's mean loss by its share of the batch's predicted tokens, so the summed
// gradient is the gradient of the whole batch's mean loss whatever the split.
//   LanguageModelObjective  any causal LM (the GPT, a model of your own) on a TextDataset:
//                           next-token prediction on windows
//   PairObjective           an EncoderDecoder on a PairDataset: targets given their sources
//   MaskedLMObjective       a BertForMaskedLM on a TextDataset: windows framed [CLS] ... [SEP],
//                           the masked positions predicted
// A user's own model trains by the same loop once it says how to draw and score its batches.
#include <cstdint>

#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/masked_lm.hpp"
#include "tinygpt/nn/bert.hpp"
#include "tinygpt/data/pairs.hpp"
#include "tinygpt/nn/encoder_decoder.hpp"
#include "tinygpt/nn/causal_lm.hpp"

namespace tinygpt::train {

class Objective {
 public:
  virtual ~Objective() = default;
  virtual nn::Module& model() = 0;
  virtual Generator& dropout_generator() = 0;
  // Draws `rows` examples of `split` from `gen` (a fixed number of draws per row, so a resumed
  // run draws the same) and keeps them as the current batch.
  virtual void draw(data::Split split, int64_t rows, Generator& gen) = 0;
  // The mean loss of rows [first, first + count) of the current batch.
  virtual Tensor loss(int64_t first, int64_t count) = 0;
  // Tokens those rows predict (the loss's denominator), and tokens the whole batch processes.
  virtual int64_t predicted_tokens(int64_t first, int64_t count) const = 0;
  virtual int64_t batch_tokens() const = 0;
  // Whether the split holds enough for a batch (a validation split may be empty).
  virtual bool has(data::Split split) const = 0;
};

class LanguageModelObjective : public Objective {
 public:
  LanguageModelObjective(nn::CausalLM& model, const data::TextDataset& dataset)
      : model_(model), dataset_(dataset) {}
  nn::Module& model() override { return model_; }
  Generator& dropout_generator() override { return model_.dropout_generator(); }
  void draw(data::Split split, int64_t rows, Generator& gen) override;
  Tensor loss(int64_t first, int64_t count) override;
  int64_t predicted_tokens(int64_t, int64_t count) const override { return count * dataset_.block_size(); }
  int64_t batch_tokens() const override { return batch_.inputs.numel(); }
  bool has(data::Split split) const override { return dataset_.size(split) > dataset_.block_size(); }

 private:
  nn::CausalLM& model_;
  const data::TextDataset& dataset_;
  data::Batch batch_;  // (B,T) each
};

class PairObjective : public Objective {
 public:
  PairObjective(nn::EncoderDecoder& model, const data::PairDataset& dataset)
      : model_(model), dataset_(dataset) {}
  nn::Module& model() override { return model_; }
  Generator& dropout_generator() override { return model_.dropout_generator(); }
  void draw(data::Split split, int64_t rows, Generator& gen) override;
  Tensor loss(int64_t first, int64_t count) override;
  int64_t predicted_tokens(int64_t first, int64_t count) const override;
  int64_t batch_tokens() const override;
  bool has(data::Split split) const override { return dataset_.size(split) > 0; }

 private:
  nn::EncoderDecoder& model_;
  const data::PairDataset& dataset_;
  data::PairBatch batch_;
};

// The dataset's windows (block_size characters) framed [CLS] ... [SEP] and masked as `masking`
// says, from the same generator right after the window starts: a resumed run masks as the
// uninterrupted one did. The loss is on the chosen positions only.
class MaskedLMObjective : public Objective {
 public:
  MaskedLMObjective(nn::BertForMaskedLM& model, const data::TextDataset& dataset,
                    data::Masking masking)
      : model_(model), dataset_(dataset), masking_(masking) {}
  nn::Module& model() override { return model_; }
  Generator& dropout_generator() override { return model_.dropout_generator(); }
  void draw(data::Split split, int64_t rows, Generator& gen) override;
  Tensor loss(int64_t first, int64_t count) override;
  int64_t predicted_tokens(int64_t first, int64_t count) const override;
  int64_t batch_tokens() const override { return batch_.inputs.numel(); }
  bool has(data::Split split) const override { return dataset_.size(split) > dataset_.block_size(); }

 private:
  nn::BertForMaskedLM& model_;
  const data::TextDataset& dataset_;
  data::Masking masking_;
  data::MaskedBatch batch_;
};

}  // namespace tinygpt::train
