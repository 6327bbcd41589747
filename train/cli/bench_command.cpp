// tinygpt bench: times real training steps (forward, backward, gradient clipping, AdamW) of a
// GPT through train::Trainer, and puts them against the machine's measured sgemm peak.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/profile.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/train/flop_estimate.hpp"
#include "tinygpt/train/progress.hpp"
#include "tinygpt/train/trainer.hpp"

namespace tinygpt::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchFlags {
  ModelFlags model;
  int64_t batch = 12;
  int64_t vocab = 65;
  int64_t steps = 20;
  int64_t warmup = 3;
  int threads = 0;
  std::string data;
  bool json = false;
  bool profile = false;
  int64_t peak_size = 2048;
  uint64_t seed = 1337;
};

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

// GFLOP/s of one f32 (n x n) @ (n x n) product through tinygpt's own matmul op, i.e. OpenBLAS
// sgemm split across the OpenMP team exactly as training's products are: the median of 5 runs
// after one warm-up run.
double measure_sgemm_peak(int64_t n) {
  NoGradGuard no_grad;
  Generator gen(7);
  const Tensor a = Tensor::uniform({n, n}, gen, -1.0, 1.0);
  const Tensor b = Tensor::uniform({n, n}, gen, -1.0, 1.0);
  std::vector<double> times;
  for (int rep = 0; rep < 6; ++rep) {
    const auto start = Clock::now();
    const Tensor c = matmul(a, b);
    if (rep > 0) times.push_back(seconds_since(start));
  }
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) /
         median(times) / 1e9;
}

// Tokens uniform in [0, vocab): enough for train and val windows of any context.
std::vector<int64_t> synthetic_tokens(int64_t vocab, int64_t block, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(int64_t{1} << 17, 20 * (block + 1))));
  for (auto& id : ids) id = gen.randint(vocab);
  return ids;
}

void run_bench(const BenchFlags& f) {
  set_num_threads(f.threads);
  std::vector<int64_t> tokens;
  int64_t vocab = f.vocab;
  std::string source = "synthetic random tokens";
  if (!f.data.empty()) {
    const std::string text = data::load_text(f.data);
    const auto tokenizer = data::CharTokenizer::fit(text);
    tokens = tokenizer.encode(text);
    vocab = tokenizer.vocab_size();
    source = f.data;
  } else {
    tokens = synthetic_tokens(vocab, f.model.block, f.seed);
  }
  try {  // before the model, its gradients and optimiser state are allocated
    train::check_training_memory(
        train::estimate_training_memory(f.model.config(vocab), f.batch, "adamw"));
  } catch (const train::MemoryError& e) {
    throw ValueError(memory_in_flag_terms(e));
  }
  const data::TextDataset dataset(std::move(tokens), f.model.block, 0.1);
  nn::GPT model(f.model.config(vocab), f.seed);

  train::TrainOptions options;
  options.batch = f.batch;
  options.steps = f.warmup + f.steps;
  options.warmup = std::min<int64_t>(options.steps, 100);
  options.eval_every = options.steps + 1;
  options.seed = f.seed;
  train::Trainer trainer(model, dataset, options);

  const nn::GPTConfig& cfg = model.config();
  const int64_t tokens_per_step = f.batch * cfg.block_size;
  const int64_t n_params = model.num_parameters();
  const int64_t n_matmul_params = train::matmul_parameter_count(cfg);
  const double flops_per_token = train::training_flops_per_token(cfg);
  const double flops_per_step = flops_per_token * static_cast<double>(tokens_per_step);

  for (int64_t i = 0; i < f.warmup; ++i) trainer.step();
  const MemoryStats warm = memory_stats();
  if (f.profile) set_op_profiling(true);
  std::vector<double> times;
  double last_loss = NAN;
  for (int64_t i = 0; i < f.steps; ++i) {
    const auto start = Clock::now();
    const train::StepStats s = trainer.step();
    times.push_back(seconds_since(start));
    last_loss = s.loss;
  }
  set_op_profiling(false);
  const MemoryStats end = memory_stats();
  const double rss = peak_rss_mb();  // before the sgemm probe's buffers
  empty_cache();
  const double peak = f.peak_size > 0 ? measure_sgemm_peak(f.peak_size) : NAN;

  const double ms = 1000.0 * median(times);
  const double tokens_per_s = static_cast<double>(tokens_per_step) / (ms / 1000.0);
  const double gflops = flops_per_step / (ms / 1000.0) / 1e9;
  const double mfu = train::model_flops_utilization(flops_per_step, ms / 1000.0, peak * 1e9);
  const int64_t steady_allocs = end.system_allocations - warm.system_allocations;
  const auto profile = op_profile();

  if (f.json) {
    json j = {
        {"ms_per_step", ms},
        {"tokens_per_s", tokens_per_s},
        {"gflops", gflops},
        {"peak_gflops", std::isnan(peak) ? json(nullptr) : json(peak)},
        {"mfu", std::isnan(mfu) ? json(nullptr) : json(mfu)},
        {"peak_rss_mb", rss},
        {"ms_min", 1000.0 * *std::min_element(times.begin(), times.end())},
        {"ms_max", 1000.0 * *std::max_element(times.begin(), times.end())},
        {"steps", f.steps},
        {"warmup", f.warmup},
        {"threads", num_threads()},
        {"omp_wait_policy", env_or("OMP_WAIT_POLICY", "")},
        {"gomp_spincount", env_or("GOMP_SPINCOUNT", "")},
        {"params", n_params},
        {"flops_per_step", flops_per_step},
        {"final_loss", last_loss},
        {"kv_cache_bytes", model.kv_cache_bytes(cfg.block_size)},
        {"config",
         {{"layers", cfg.n_layer}, {"heads", cfg.n_head}, {"kv_heads", cfg.kv_heads()},
          {"pos", nn::position_embedding_name(cfg.position_embedding)}, {"d_model", cfg.n_embd},
          {"block", cfg.block_size}, {"batch", f.batch}, {"vocab", vocab}}},
        {"allocator",
         {{"system_allocations", end.system_allocations},
          {"system_allocations_timed_steps", steady_allocs},
          {"cache_hits", end.cache_hits},
          {"peak_bytes_in_use", end.peak_bytes_in_use},
          {"bytes_cached", end.bytes_cached}}},
    };
    if (f.profile) {
      json ops = json::array();
      for (const auto& e : profile) {
        ops.push_back({{"op", e.name},
                       {"forward_ms_per_step", 1000.0 * e.forward_seconds / f.steps},
                       {"backward_ms_per_step", 1000.0 * e.backward_seconds / f.steps}});
      }
      j["profile"] = ops;
    }
    fmt::print("{}\n", j.dump());
    return;
  }

  constexpr double kMiB = 1024.0 * 1024.0;
  fmt::print("tinygpt bench: {}, {} ({} key/value), d_model {}, context {}, {} "
             "positions, batch {}, vocab {} ({})\n",
             train::count_of(cfg.n_layer, "layer"), train::count_of(cfg.n_head, "head"), cfg.kv_heads(), cfg.n_embd, cfg.block_size,
             nn::position_embedding_name(cfg.position_embedding), f.batch, vocab, source);
  fmt::print("  parameters      {} ({} in products)\n", n_params, n_matmul_params);
  fmt::print("  threads         {} (OpenMP, GOMP_SPINCOUNT={}, OMP_WAIT_POLICY={}; OpenBLAS "
             "single-threaded inside it)\n",
             num_threads(), env_or("GOMP_SPINCOUNT", "unset"), env_or("OMP_WAIT_POLICY", "unset"));
  fmt::print("  steps           {} timed after {} warm-up\n", f.steps, f.warmup);
  fmt::print("  ms/step         {:.2f} median (min {:.2f}, max {:.2f})\n", ms,
             1000.0 * *std::min_element(times.begin(), times.end()),
             1000.0 * *std::max_element(times.begin(), times.end()));
  fmt::print("  tokens/s        {:.0f}\n", tokens_per_s);
  fmt::print("  model FLOPs     {:.3f} GFLOP/step = (6 N + 12 L C T) x B T, N = {}\n",
             flops_per_step / 1e9, n_matmul_params);
  fmt::print("  effective       {:.1f} GFLOP/s\n", gflops);
  if (f.peak_size > 0) {
    fmt::print("  sgemm peak      {:.1f} GFLOP/s (f32 {}^3 through matmul, {} threads)\n", peak,
               f.peak_size, num_threads());
    fmt::print("  MFU             {:.3f}\n", mfu);
  }
  fmt::print("  peak RSS        {:.1f} MB\n", rss);
  fmt::print("  KV cache        {} bytes at context {}, batch 1 (2 x layers x kv_heads x T x d_head "
             "x 4)\n",
             model.kv_cache_bytes(cfg.block_size), cfg.block_size);
  fmt::print("  allocator       {} system allocations ({} during the timed steps), {} cache hits, "
             "peak in use {:.1f} MiB, cached {:.1f} MiB\n",
             end.system_allocations, steady_allocs, end.cache_hits,
             static_cast<double>(end.peak_bytes_in_use) / kMiB,
             static_cast<double>(end.bytes_cached) / kMiB);
  fmt::print("  final loss      {:.6f}\n", last_loss);
  if (f.profile) {
    fmt::print("\n  per-op time, ms per step (forward | backward | total), largest first:\n");
    double total = 0.0;
    for (const auto& e : profile) total += e.forward_seconds + e.backward_seconds;
    for (const auto& e : profile) {
      const double fw = 1000.0 * e.forward_seconds / f.steps;
      const double bw = 1000.0 * e.backward_seconds / f.steps;
      fmt::print("  {:<28} {:9.3f} {:9.3f} {:9.3f}  {:5.1f}%\n", e.name, fw, bw, fw + bw,
                 100.0 * (e.forward_seconds + e.backward_seconds) / total);
    }
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time full training steps (forward, backward, grad clip, AdamW) and report ms/step, "
      "tokens/s, GFLOP/s, MFU against the measured sgemm peak, peak RSS and allocator stats");
  cmd->footer(
      "Model FLOPs per token are nanoGPT's estimate, 6 N + 12 L C T (N: parameters without the "
      "position embedding; L layers, C width, T context); MFU is that rate over the f32 sgemm "
      "rate measured on --peak-size square matrices through the same OpenMP-split matmul.");
  flags->model.add_to(*cmd);
  cmd->add_option("--batch", flags->batch, "sequences per step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--vocab", flags->vocab, "vocabulary of the synthetic tokens (65: Shakespeare's)")->check(CLI::Range(int64_t{1}, int64_t{1} << 24))->capture_default_str();
  cmd->add_option("--steps", flags->steps, "timed steps")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--warmup", flags->warmup, "untimed steps first (caches, allocator)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--threads", flags->threads, "OpenMP threads (0: all cores); OpenBLAS stays at 1 inside them")->check(CLI::Range(0, 256))->capture_default_str();
  cmd->add_option("--data", flags->data, "train on this UTF-8 text file's characters instead of synthetic tokens (sets the vocabulary)")->type_name("FILE");
  cmd->add_option("--seed", flags->seed, "seed for initialisation and batches")->check(seed_value())->capture_default_str();
  cmd->add_option("--peak-size", flags->peak_size, "side of the square sgemm that measures the peak (0: skip)")->check(CLI::Range(int64_t{0}, int64_t{16384}))->capture_default_str();
  cmd->add_flag("--profile", flags->profile, "also print the time per op (forward and backward) of the timed steps");
  cmd->add_flag("--json", flags->json, "print one JSON object instead of the table");
  cmd->callback([flags] { run_bench(*flags); });
}

}  // namespace tinygpt::cli
