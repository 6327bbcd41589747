#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/nn/sampler.hpp"
#include "tinygpt/train/bench.hpp"
#include "tinygpt/train/checkpoint.hpp"

namespace tinygpt::train {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// GB/s at which the OpenMP team reads a buffer far larger than the caches, each thread summing
// its slice in 32 independent lanes (one running sum would wait on the adds, not on memory): the
// ceiling of a decode step, which reads every weight once. The best of 4 passes after one that
// maps the pages.
double measure_read_bandwidth_gb_s() {
  constexpr int64_t kLanes = 32;
  const std::vector<float> buffer(size_t{32} << 20, 1.0f);  // 128 MiB
  const auto n = static_cast<int64_t>(buffer.size());
  double best = 0.0, sink = 0.0;
  for (int pass = 0; pass < 5; ++pass) {
    const Clock::time_point start = Clock::now();
    double total = 0.0;
#pragma omp parallel reduction(+ : total)
    {
      const int64_t thread = omp_get_thread_num(), team = omp_get_num_threads();
      const int64_t begin = n * thread / team / kLanes * kLanes, end = n * (thread + 1) / team / kLanes * kLanes;
      std::array<float, kLanes> lanes{};
      for (int64_t i = begin; i < end; i += kLanes) {
        for (int64_t j = 0; j < kLanes; ++j) lanes[static_cast<size_t>(j)] += buffer[static_cast<size_t>(i + j)];
      }
      for (const float lane : lanes) total += lane;
    }
    const double seconds = seconds_since(start);
    sink += total;
    if (pass > 0) best = std::max(best, static_cast<double>(n) * sizeof(float) / seconds / 1e9);
  }
  return sink > 0.0 ? best : 0.0;  // the sums used, so the reads stay
}

// Bytes a decode step reads: every weight matrix once (the tied embedding as the LM head), one
// row of each embedding table aside, at 2 bytes a value in bf16 (the vectors, biases and layer
// norms, stay f32), and the cache's keys and values at its mean length.
struct DecodeBytes {
  double weights = 0.0, kv_cache = 0.0;
};
DecodeBytes decode_bytes(const nn::GPT& model, const GenerationSettings& s) {
  DecodeBytes out;
  for (const auto& [name, p] : model.named_parameters()) {
    const bool rounded = s.precision == Precision::bf16 && p.ndim() == 2;
    if (name != "transformer.wpe.weight") out.weights += static_cast<double>(p.numel()) * (rounded ? 2 : dtype_size(p.dtype()));
  }
  const nn::GPTConfig& c = model.config();
  const double mean_positions =
      static_cast<double>(std::min(s.prompt_tokens + s.new_tokens / 2, c.block_size));
  out.kv_cache = 2.0 * c.n_layer * c.kv_heads() * (c.n_embd / c.n_head) * mean_positions * sizeof(float);
  return out;
}

std::string generation_text(const json& j) {
  return fmt::format(
      "model {}: {} threads, prompt {} tokens, {} new ({}, {}), seed {}\n"
      "load                {:.3f} s\n"
      "first token         {:.3f} s (the prompt's forward)\n"
      "decode              {:.2f} tokens/s ({:.2f} ms/token)\n"
      "peak RSS            {:.1f} MB\n"
      "bytes per token     {:.1f} MB of weights + {:.1f} MB of KV cache (mean)\n"
      "read bandwidth      {:.1f} GB/s (the team summing 128 MiB)\n"
      "bandwidth bound     {:.2f} tokens/s; decode reaches {:.2f} of it\n",
      j["model"].get<std::string>(), j["threads"].get<int>(), j["prompt_tokens"].get<int64_t>(),
      j["new_tokens"].get<int64_t>(), j["top_k"].get<int64_t>() > 0 ? fmt::format("top-k {}", j["top_k"].get<int64_t>()) : "greedy",
      j["precision"].get<std::string>(),
      j["seed"].get<uint64_t>(), j["load_s"].get<double>(), j["first_token_s"].get<double>(),
      j["decode_tokens_per_s"].get<double>(), j["decode_ms_per_token"].get<double>(),
      j["peak_rss_mb"].get<double>(), j["weight_bytes_per_token"].get<double>() / 1e6,
      j["kv_cache_bytes_per_token"].get<double>() / 1e6, j["read_bandwidth_gb_s"].get<double>(),
      j["bandwidth_bound_tokens_per_s"].get<double>(), j["fraction_of_bound"].get<double>());
}

}  // namespace

BenchReport bench_generation(const std::string& model_dir, const GenerationSettings& s) {
  if (s.prompt_tokens < 1 || s.new_tokens < 2) {
    throw ValueError(Operation("bench_generation"), "a prompt of at least 1 token and at least 2 new tokens");
  }
  const Clock::time_point load_start = Clock::now();
  const std::unique_ptr<Task> task = load_task(model_dir);
  const double load_s = seconds_since(load_start);
  auto* language_model = dynamic_cast<LanguageModelTask*>(task.get());
  nn::GPT* model = language_model != nullptr ? language_model->gpt() : nullptr;
  if (model == nullptr) throw ValueError(fmt::format("{}: bench times a GPT's generation; this is {}", model_dir, task->kind()));
  // Ids 0, 1, 2, ... as the prompt: any text's tokens cost the same.
  std::vector<int64_t> prompt(static_cast<size_t>(s.prompt_tokens));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int64_t>(i) % model->config().vocab_size;
  nn::SampleOptions options;
  options.tokens = s.new_tokens;
  options.top_k = s.top_k;
  options.temperature = s.top_k > 0 ? 1.0 : 0.0;
  options.seed = s.seed;
  options.precision = s.precision;
  const Clock::time_point start = Clock::now();
  double first_token_s = 0.0;
  nn::generate(*model, prompt, options, [&](int64_t) {
    if (first_token_s == 0.0) first_token_s = seconds_since(start);
  });
  const double decode_s = seconds_since(start) - first_token_s;
  const DecodeBytes bytes = decode_bytes(*model, s);
  const double bandwidth = measure_read_bandwidth_gb_s();
  const double bound = bandwidth * 1e9 / (bytes.weights + bytes.kv_cache);
  const double tokens_per_s = static_cast<double>(s.new_tokens - 1) / decode_s;
  json j = {{"mode", "generate"},
            {"model", model_dir},
            {"threads", omp_get_max_threads()},
            {"prompt_tokens", s.prompt_tokens},
            {"new_tokens", s.new_tokens},
            {"top_k", s.top_k},
            {"precision", precision_name(s.precision)},
            {"seed", s.seed},
            {"load_s", load_s},
            {"first_token_s", first_token_s},
            {"decode_tokens_per_s", tokens_per_s},
            {"decode_ms_per_token", 1e3 / tokens_per_s},
            {"peak_rss_mb", peak_rss_mb()},
            {"weight_bytes_per_token", bytes.weights},
            {"kv_cache_bytes_per_token", bytes.kv_cache},
            {"read_bandwidth_gb_s", bandwidth},
            {"bandwidth_bound_tokens_per_s", bound},
            {"fraction_of_bound", tokens_per_s / bound}};
  return {j, generation_text(j)};
}

}  // namespace tinygpt::train
