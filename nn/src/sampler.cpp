#include "tinygpt/nn/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::nn {

int64_t sample_next(const Tensor& logits_btv, const SampleOptions& options, Generator& gen,
                    int64_t output_index) {
  const int64_t vocab = logits_btv.size(-1);
  const Tensor f32 = logits_btv.dtype() == DType::f32 ? logits_btv : logits_btv.to(DType::f32);
  const float* logits = f32.data<float>() + f32.numel() - vocab;  // the last position's
  // Text drawn from NaN or infinite logits would be garbage that looks like output.
  if (!std::all_of(logits, logits + vocab, [](float v) { return std::isfinite(v); })) {
    throw ValueError(Operation("generate"), fmt::format("the logits for output token {} are not finite: the "
                                 "model's computation overflows float32 or meets NaN",
                                 output_index));
  }
  if (options.temperature <= 0.0) return std::max_element(logits, logits + vocab) - logits;
  std::vector<double> scaled(logits, logits + vocab);
  double cutoff = -INFINITY;
  if (options.top_k > 0 && options.top_k < vocab) {
    std::vector<double> sorted = scaled;
    std::nth_element(sorted.begin(), sorted.begin() + (options.top_k - 1), sorted.end(),
                     std::greater<>());
    cutoff = sorted[static_cast<size_t>(options.top_k - 1)];
  }
  const double top = *std::max_element(scaled.begin(), scaled.end());
  double total = 0.0;
  for (double& s : scaled) {
    s = s < cutoff ? 0.0 : std::exp((s - top) / options.temperature);
    total += s;
  }
  double u = gen.uniform() * total;
  for (int64_t i = 0; i < vocab; ++i) {
    u -= scaled[static_cast<size_t>(i)];
    if (u < 0.0) return i;
  }
  return vocab - 1;  // rounding left u just above 0
}

std::vector<int64_t> generate(nn::GPT& model, const std::vector<int64_t>& prompt,
                              const SampleOptions& options,
                              const std::function<void(int64_t)>& on_token) {
  if (prompt.empty()) throw ValueError(Operation("generate"), "the prompt needs at least one token");
  if (options.tokens < 0) throw ValueError(Operation("generate"), "tokens must be >= 0");
  if (options.temperature < 0.0) throw ValueError(Operation("generate"), "temperature must be >= 0");
  const int64_t block = model.config().block_size;
  NoGradGuard no_grad;
  model.eval();
  model.set_generation_precision(options.precision);
  Generator gen(options.seed);
  // A model that generates past its context keeps one cache (a window's ring, linear attention's
  // running sums) for the whole text.
  const bool unbounded = model.generates_past_context();
  std::vector<int64_t> window(prompt.end() - std::min<int64_t>(prompt.size(), block), prompt.end());
  std::vector<nn::KVCache> cache;
  std::vector<int64_t> out;
  int64_t skipped = 0;
  while (static_cast<int64_t>(out.size()) < options.tokens) {
    if (unbounded && options.use_cache && !cache.empty()) {
      window.erase(window.begin(), window.end() - 1);  // the cache holds the rest
    } else if (!unbounded && static_cast<int64_t>(window.size()) >= block) {
      // At least the newest token stays: with a context of 1, block / 2 would empty the window.
      window.erase(window.begin(), window.end() - std::max<int64_t>(1, block / 2));
      cache.clear();
    }
    // Feed what the model has not seen: everything, or with a warm cache the newest position.
    const bool warm = options.use_cache && !cache.empty();
    const std::vector<int64_t> feed = warm ? std::vector<int64_t>{window.back()} : window;
    if (options.use_cache && cache.empty()) cache = model.make_cache();
    std::optional<PrecisionGuard> prompt_products;
    if (options.precision == Precision::bf16 && !warm && bf16_unsupported_reason().empty()) {
      prompt_products.emplace(Precision::bf16);
    }
    const Tensor out_logits = model.next_logits(Tensor::from_ids(feed, {1, static_cast<int64_t>(feed.size())}),
                                                options.use_cache ? &cache : nullptr);  // (1,1,V)
    const int64_t next = sample_next(out_logits, options, gen, static_cast<int64_t>(out.size()));
    window.push_back(next);
    if (out.empty() && next == options.skip_leading && skipped < block) {
      ++skipped;
      continue;
    }
    out.push_back(next);
    if (on_token) on_token(next);
  }
  return out;
}

}  // namespace tinygpt::nn
