#include "tinygpt/train/masked_lm_eval.hpp"

#include <algorithm>
#include <cmath>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::train {
namespace {

// -log p(label) and whether the label is the most probable token, from one position's logits.
struct Prediction {
  double nll = 0.0;
  bool correct = false;
};
Prediction predict(const double* logits, int64_t vocab, int64_t label) {
  const double* best = std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(logits[v] - *best);
  return {*best + std::log(sum) - logits[label], best - logits == label};
}

int64_t windows_of(const data::TextDataset& data, data::Split split) {
  const int64_t n = data.num_windows(split);
  if (n == 0) {
    throw ValueError(Operation("score_masked_lm"),
                     fmt::format("the split holds no window of {} tokens", data.block_size()));
  }
  return n;
}

}  // namespace

MaskedLMScore score_masked_lm(nn::BertForMaskedLM& model, const data::TextDataset& data,
                              data::Split split, const data::Masking& masking, int64_t batch,
                              uint64_t seed) {
  NoGradGuard no_grad;
  model.eval();
  MaskedLMScore score;
  score.windows = windows_of(data, split);
  Generator gen(seed);
  double nll = 0.0;
  int64_t correct = 0;
  for (int64_t first = 0; first < score.windows; first += batch) {
    const int64_t count = std::min(batch, score.windows - first);
    const data::MaskedBatch masked = data::mask_tokens(
        data::MaskedLMTokenizer::frame(data.window_batch(split, first, count).inputs), masking, gen);
    const Tensor logits = model.forward(masked.inputs).to(DType::f64);
    const int64_t vocab = logits.size(2);
    const int64_t* labels = masked.labels.data<int64_t>();
    for (int64_t i = 0; i < masked.labels.numel(); ++i) {
      if (labels[i] == nn::BertForMaskedLM::kIgnoreIndex) continue;
      const Prediction p = predict(logits.data<double>() + i * vocab, vocab, labels[i]);
      nll += p.nll;
      correct += p.correct;
      ++score.masked;
    }
  }
  score.loss = nll / static_cast<double>(score.masked);
  score.accuracy = static_cast<double>(correct) / static_cast<double>(score.masked);
  return score;
}

double pseudo_perplexity(nn::BertForMaskedLM& model, const data::TextDataset& data, data::Split split,
                         int64_t max_windows) {
  NoGradGuard no_grad;
  model.eval();
  const int64_t windows = std::min(windows_of(data, split), max_windows);
  double nll = 0.0;
  int64_t tokens = 0;
  for (int64_t w = 0; w < windows; ++w) {
    // Row r: the framed window with its r-th character (position r + 1) masked.
    const Tensor framed = data::MaskedLMTokenizer::frame(data.window_batch(split, w, 1).inputs);
    const int64_t t = framed.size(1), chars = t - 2;
    const int64_t* ids = framed.data<int64_t>();
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < chars; ++r) {
      rows.insert(rows.end(), ids, ids + t);
      rows[static_cast<size_t>(r * t + r + 1)] = data::MaskedLMTokenizer::kMask;
    }
    const Tensor logits = model.forward(Tensor::from_ids(rows, {chars, t})).to(DType::f64);
    const int64_t vocab = logits.size(2);
    for (int64_t r = 0; r < chars; ++r) {
      nll += predict(logits.data<double>() + (r * t + r + 1) * vocab, vocab, ids[r + 1]).nll;
      ++tokens;
    }
  }
  return std::exp(nll / static_cast<double>(tokens));
}

}  // namespace tinygpt::train
