#include "probe_runs.hpp"

#include <algorithm>

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::heads {

std::vector<int64_t> layer_head_numbers(const nn::CausalLM& model, int64_t layer) {
  if (const auto* gpt = dynamic_cast<const nn::GPT*>(&model)) return gpt->config().kept_heads(layer);
  std::vector<int64_t> all(static_cast<size_t>(model.shape().n_head));
  for (size_t h = 0; h < all.size(); ++h) all[h] = static_cast<int64_t>(h);
  return all;
}

Tensor batch_of(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  return Tensor::from_ids(flat, {static_cast<int64_t>(rows.size()),
                                 static_cast<int64_t>(rows.empty() ? 0 : rows[0].size())});
}

int64_t probe_period(int64_t block_size, const HeadProbes& probes) {
  const auto alphabet_size = static_cast<int64_t>(probes.alphabet.size());
  const int64_t period = probes.period > 0
                             ? probes.period
                             : std::min({block_size / 2, int64_t{32}, alphabet_size});
  if (2 * period > block_size || period < 2) {
    throw ValueError(Operation("analyze_heads"), fmt::format("two copies of period {} do not fit context {}",
                                 period, block_size));
  }
  if (period > alphabet_size) {
    throw ValueError(Operation("analyze_heads"), fmt::format("a copy of period {} needs that many distinct "
                                 "tokens, the alphabet has {}",
                                 period, alphabet_size));
  }
  return period;
}

std::vector<std::vector<int64_t>> repeated_sequences(const HeadProbes& probes, int64_t period) {
  // Each copy has no token twice (the first `period` draws of a shuffle), so every token of the
  // second copy has exactly one previous occurrence and the induction target is unambiguous, as
  // with random tokens from a large vocabulary.
  Generator gen(probes.seed);
  std::vector<std::vector<int64_t>> repeated;
  for (int64_t r = 0; r < probes.num_random; ++r) {
    std::vector<int64_t> copy = probes.alphabet;
    gen.shuffle_front(copy, period);
    copy.resize(static_cast<size_t>(period));
    std::vector<int64_t> seq = copy;  // inserting a vector's own range into it is undefined
    seq.insert(seq.end(), copy.begin(), copy.end());
    repeated.push_back(std::move(seq));
  }
  return repeated;
}

double mean_next_token_loss(const Tensor& logits, const std::vector<std::vector<int64_t>>& rows,
                            int64_t first, int64_t last) {
  const Tensor log_probs = log_softmax(logits, -1).to(DType::f32);  // (B,T,V)
  const int64_t t = log_probs.size(1), v = log_probs.size(2);
  const float* lp = log_probs.data<float>();
  double total = 0.0;
  int64_t count = 0;
  for (size_t s = 0; s < rows.size(); ++s) {
    for (int64_t i = first; i < last; ++i) {
      total -= lp[(static_cast<int64_t>(s) * t + i) * v + rows[s][static_cast<size_t>(i + 1)]];
      ++count;
    }
  }
  return count > 0 ? total / static_cast<double>(count) : 0.0;
}

CopyLosses copy_losses(const Tensor& logits, const std::vector<std::vector<int64_t>>& repeated,
                       int64_t period) {
  return {mean_next_token_loss(logits, repeated, 0, period - 1),
          mean_next_token_loss(logits, repeated, period, 2 * period - 1)};
}

}  // namespace tinygpt::heads
