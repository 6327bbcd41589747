#include "tinygpt/seq2seq/pair_eval.hpp"

#include <algorithm>

#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/data/utf8.hpp"

namespace tinygpt::seq2seq {
namespace {

constexpr size_t kMissesKept = 5;

int64_t pairs_used(const data::PairDataset& data, data::Split split, int64_t max_pairs) {
  const int64_t n = data.size(split);
  return max_pairs > 0 ? std::min(n, max_pairs) : n;
}

// f(first, count) over consecutive batches of the first `n` pairs.
template <class F>
void in_batches(int64_t n, int64_t batch, F&& f) {
  for (int64_t first = 0; first < n; first += batch) f(first, std::min(batch, n - first));
}

}  // namespace

PairAccuracy pair_accuracy(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::Tokenizer& tokenizer, data::Split split,
                           int64_t max_pairs, int64_t batch) {
  PairAccuracy out;
  out.pairs = pairs_used(data, split, max_pairs);
  int64_t exact = 0, equal_chars = 0, compared_chars = 0;
  in_batches(out.pairs, batch, [&](int64_t first, int64_t count) {
    const data::PairBatch b = data.batch(split, first, count);
    const auto decoded = nn::greedy_decode(model, b.source, b.source_lengths, model.config().max_position_embeddings);
    for (int64_t r = 0; r < count; ++r) {
      const std::vector<int64_t>& want = data.target(split, first + r);
      const std::vector<int64_t>& got = decoded[static_cast<size_t>(r)];
      const size_t shared = std::min(want.size(), got.size());
      for (size_t i = 0; i < shared; ++i) equal_chars += want[i] == got[i];
      compared_chars += static_cast<int64_t>(std::max(want.size(), got.size()));
      if (got == want) {
        ++exact;
      } else if (out.misses.size() < kMissesKept) {
        out.misses.push_back({tokenizer.decode(data.source(split, first + r)), tokenizer.decode(want),
                              tokenizer.decode(got)});
      }
    }
  });
  if (out.pairs > 0) {
    out.exact_match = static_cast<double>(exact) / static_cast<double>(out.pairs);
    out.char_accuracy = static_cast<double>(equal_chars) / static_cast<double>(std::max<int64_t>(1, compared_chars));
  }
  return out;
}

std::vector<CrossHeadScore> cross_attention_alignment(nn::EncoderDecoder& model,
                                                      const data::PairDataset& data,
                                                      const data::Tokenizer& tokenizer,
                                                      const std::string& task, data::Split split,
                                                      int64_t max_pairs, int64_t batch) {
  if (!data::is_pair_task(task)) return {};
  const int64_t layers = model.config().decoder_layers, heads = model.config().decoder_attention_heads;
  std::vector<double> total(static_cast<size_t>(layers * heads), 0.0);
  int64_t aligned_chars = 0;
  NoGradGuard no_grad;
  model.eval();
  model.set_keep_attention_weights(true);
  in_batches(pairs_used(data, split, max_pairs), batch, [&](int64_t first, int64_t count) {
    const data::PairBatch b = data.batch(split, first, count);
    model.forward(b.source, b.source_lengths, b.inputs);
    std::vector<Tensor> weights = model.cross_attention_weights();  // (B,H,T,S) per layer
    for (Tensor& w : weights) w = w.dtype() == DType::f32 ? w : w.to(DType::f32);
    const int64_t t = weights[0].size(2), s = weights[0].size(3);
    for (int64_t r = 0; r < count; ++r) {
      const std::u32string source = data::decode_utf8(tokenizer.decode(data.source(split, first + r)));
      const std::u32string target = data::decode_utf8(tokenizer.decode(data.target(split, first + r)));
      const auto aligned = data::task_alignment(task, source, target);
      // Query i reads target character i - 1 and predicts character i.
      for (size_t i = 0; i < aligned.size(); ++i) {
        if (aligned[i].empty()) continue;
        ++aligned_chars;
        for (int64_t l = 0; l < layers; ++l) {
          const Tensor& w = weights[static_cast<size_t>(l)];
          for (int64_t h = 0; h < heads; ++h) {
            const float* row = w.data<float>() + ((r * heads + h) * t + static_cast<int64_t>(i)) * s;
            double on = 0.0;
            for (const int64_t j : aligned[i]) on += row[j];
            total[static_cast<size_t>(l * heads + h)] += on;
          }
        }
      }
    }
  });
  model.set_keep_attention_weights(false);
  std::vector<CrossHeadScore> scores;
  for (int64_t l = 0; l < layers; ++l) {
    for (int64_t h = 0; h < heads; ++h) {
      scores.push_back({l, h, aligned_chars > 0 ? total[static_cast<size_t>(l * heads + h)] / static_cast<double>(aligned_chars) : 0.0});
    }
  }
  return scores;
}

}  // namespace tinygpt::seq2seq
