#include "tinygpt/train/objective.hpp"

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::train {

void LanguageModelObjective::draw(data::Split split, int64_t rows, Generator& gen) {
  batch_ = dataset_.sample_batch(split, rows, gen);
}

Tensor LanguageModelObjective::loss(int64_t first, int64_t count) {
  if (first == 0 && count == batch_.inputs.size(0)) return model_.loss(batch_.inputs, batch_.targets);
  return model_.loss(narrow(batch_.inputs, 0, first, count), narrow(batch_.targets, 0, first, count));
}

void PairObjective::draw(data::Split split, int64_t rows, Generator& gen) {
  batch_ = dataset_.sample_batch(split, rows, gen);
}

Tensor PairObjective::loss(int64_t first, int64_t count) {
  const auto rows = [&](const Tensor& x) {
    return first == 0 && count == x.size(0) ? x : narrow(x, 0, first, count);
  };
  const auto begin = batch_.source_lengths.begin() + first;
  return model_.loss(rows(batch_.source), std::vector<int64_t>(begin, begin + count),
                     rows(batch_.inputs), rows(batch_.targets));
}

int64_t PairObjective::predicted_tokens(int64_t first, int64_t count) const {
  const int64_t t = batch_.targets.size(1);
  const int64_t* targets = batch_.targets.data<int64_t>() + first * t;
  int64_t n = 0;
  for (int64_t i = 0; i < count * t; ++i) n += targets[i] != nn::EncoderDecoder::kIgnoreIndex;
  return n;
}

int64_t PairObjective::batch_tokens() const {
  int64_t sources = 0;
  for (const int64_t s : batch_.source_lengths) sources += s;
  return sources + predicted_tokens(0, batch_.targets.size(0));
}

void MaskedLMObjective::draw(data::Split split, int64_t rows, Generator& gen) {
  const data::Batch windows = dataset_.sample_batch(split, rows, gen);
  batch_ = data::mask_tokens(data::MaskedLMTokenizer::frame(windows.inputs), masking_, gen);
}

Tensor MaskedLMObjective::loss(int64_t first, int64_t count) {
  if (first == 0 && count == batch_.inputs.size(0)) return model_.loss(batch_.inputs, {}, batch_.labels);
  return model_.loss(narrow(batch_.inputs, 0, first, count), {}, narrow(batch_.labels, 0, first, count));
}

int64_t MaskedLMObjective::predicted_tokens(int64_t first, int64_t count) const {
  const int64_t t = batch_.labels.size(1);
  const int64_t* labels = batch_.labels.data<int64_t>() + first * t;
  int64_t n = 0;
  for (int64_t i = 0; i < count * t; ++i) n += labels[i] != nn::BertForMaskedLM::kIgnoreIndex;
  return n;
}

}  // namespace tinygpt::train
