// tinygpt bench: times real training steps (forward, backward, gradient clipping, AdamW) of a
// GPT through train::Trainer, and puts them against the machine's arithmetic peak, measured with
// a register-only kernel (train/machine_peak.hpp) that no library's kernel choice can lower.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/autograd/gemm_backend.hpp"
#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/profile.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/pairs.hpp"
#include "tinygpt/data/utf8.hpp"
#include "tinygpt/train/flop_estimate.hpp"
#include "tinygpt/train/machine_peak.hpp"
#include "tinygpt/train/progress.hpp"
#include "tinygpt/train/trainer.hpp"

namespace tinygpt::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchFlags {
  std::string arch = "gpt";
  ModelFlags model;
  int64_t batch = 12;
  int64_t vocab = 65;
  int64_t steps = 20;
  int64_t warmup = 3;
  int threads = 0;
  std::string data;
  bool json = false;
  bool profile = false;
  std::string precision = "f32";
  int64_t peak_size = 2048;
  uint64_t seed = 1337;
};

// The flags that size bench's model: the synthetic tokens' vocabulary too (a text's is its own).
constexpr const char* kBenchModelFlags = "--layers/--d-model/--vocab";

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

// Tokens uniform in [0, vocab): enough for train and val windows of any context.
std::vector<int64_t> synthetic_tokens(int64_t vocab, int64_t block, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(int64_t{1} << 17, 20 * (block + 1))));
  for (auto& id : ids) id = gen.randint(vocab);
  return ids;
}

// The machine's peaks from one probe of each; bench probes before the steps and again after
// them and keeps the higher readings (train::higher_reading).
struct Peaks {
  train::MachinePeak f32;
  std::optional<train::MachinePeak> bf16;  // whether the CPU has bf16 units does not change
};
Peaks probe_peaks() { return {train::measure_f32_peak(), train::measure_bf16_peak()}; }

// Timed steps of a trainer after untimed warm-up ones: each step's seconds, the last loss, the
// allocator's counts before and after them, and (with `profile`) each op's share of them.
struct TimedSteps {
  std::vector<double> seconds;
  double last_loss = NAN;
  MemoryStats warm, end;
  std::vector<OpProfileEntry> profile;
};
TimedSteps time_steps(train::Trainer& trainer, int64_t warmup, int64_t steps, bool profile) {
  for (int64_t i = 0; i < warmup; ++i) trainer.step();
  TimedSteps out;
  out.warm = memory_stats();
  set_op_profiling(profile);
  for (int64_t i = 0; i < steps; ++i) {
    const auto start = Clock::now();
    out.last_loss = trainer.step().loss;
    out.seconds.push_back(seconds_since(start));
  }
  set_op_profiling(false);
  out.end = memory_stats();
  if (profile) out.profile = op_profile();
  return out;
}

// The timed steps as both reports give them: the median, fastest and slowest step, ms.
struct StepTimes {
  double median_ms, min_ms, max_ms;
};
StepTimes step_times(const TimedSteps& timed) {
  const auto [fastest, slowest] = std::minmax_element(timed.seconds.begin(), timed.seconds.end());
  return {1000.0 * median(timed.seconds), 1000.0 * *fastest, 1000.0 * *slowest};
}
json step_times_json(const StepTimes& t) {
  return {{"ms_per_step", t.median_ms}, {"ms_min", t.min_ms}, {"ms_max", t.max_ms}};
}
void print_step_times(const StepTimes& t) {
  fmt::print("  ms/step         {:.2f} median (min {:.2f}, max {:.2f})\n", t.median_ms, t.min_ms,
             t.max_ms);
}

// How the steps ran, for every architecture: the threads, their idle spinning (which the
// environment may choose) and whether subnormals are flushed -- each moves the timings.
json run_settings_json() {
  return {{"threads", num_threads()},
          {"omp_wait_policy", env_or("OMP_WAIT_POLICY", "")},
          {"gomp_spincount", env_or("GOMP_SPINCOUNT", "")},
          {"flush_denormals", flush_denormals()}};
}
void print_run_settings() {
  fmt::print("  threads         {} (OpenMP, GOMP_SPINCOUNT={}, OMP_WAIT_POLICY={}; each product "
             "single-threaded inside it){}\n",
             num_threads(), env_or("GOMP_SPINCOUNT", "unset"), env_or("OMP_WAIT_POLICY", "unset"),
             flush_denormals() ? "; subnormals flushed to zero" : "");
}

// What the products ran on: the precision, where bf16 which units, and the library and kernel.
json products_json(Precision precision) {
  const GemmBackend backend = gemm_backend(DType::f32);
  return {{"precision", precision_name(precision)},
          {"bf16_products", precision == Precision::bf16
                                ? json(bf16_products_name(bf16_products()))
                                : json(nullptr)},
          {"gemm_backend", backend.library},
          {"gemm_kernel", backend.kernel}};
}
void print_products(Precision precision) {
  const GemmBackend backend = gemm_backend(DType::f32);
  const std::string kind =
      precision == Precision::f32
          ? "f32"
          : fmt::format("bf16 inputs, f32 accumulation on {} ({})",
                        bf16_products_description(bf16_products()),
                        bf16_products_name(bf16_products()));
  fmt::print("  products        {}: {} ({} kernel)\n", kind, backend.library, backend.kernel);
}

// Per op, the forward and backward time of the timed steps (bench --profile), largest first.
json profile_json(const std::vector<OpProfileEntry>& profile, int64_t steps) {
  json ops = json::array();
  for (const auto& e : profile) {
    ops.push_back({{"op", e.name},
                   {"forward_ms_per_step", 1000.0 * e.forward_seconds / steps},
                   {"backward_ms_per_step", 1000.0 * e.backward_seconds / steps}});
  }
  return ops;
}
void print_profile(const std::vector<OpProfileEntry>& profile, int64_t steps) {
  fmt::print("\n  per-op time, ms per step (forward | backward | total), largest first:\n");
  double total = 0.0;
  for (const auto& e : profile) total += e.forward_seconds + e.backward_seconds;
  for (const auto& e : profile) {
    const double fw = 1000.0 * e.forward_seconds / steps;
    const double bw = 1000.0 * e.backward_seconds / steps;
    fmt::print("  {:<28} {:9.3f} {:9.3f} {:9.3f}  {:5.1f}%\n", e.name, fw, bw, fw + bw,
               100.0 * (e.forward_seconds + e.backward_seconds) / total);
  }
}

// The Trainer's options for a bench: --warmup + --steps steps of --batch in --precision, a
// learning-rate warmup of at most 100 steps, and no evaluation.
train::TrainOptions bench_options(const BenchFlags& f) {
  train::TrainOptions options;
  options.batch = f.batch;
  options.steps = f.warmup + f.steps;
  options.warmup = std::min<int64_t>(options.steps, 100);
  options.eval_every = options.steps + 1;
  options.seed = f.seed;
  options.precision = f.precision;
  return options;
}

// --precision, once the Trainer's options pass the checks train makes (bf16 where it cannot run
// is refused there), reported in the flags' words as train reports them.
Precision bench_precision(const BenchFlags& f) {
  try {
    bench_options(f).validate();
  } catch (const ValueError& e) {
    throw UsageError(in_flag_terms(e));
  }
  return parse_precision(f.precision);
}

// bench --arch encoder-decoder: the default encoder-decoder's training steps on random pairs
// whose source and target both fill the positions (--block - 1 characters of --vocab, the target
// with its start and end token): the shapes to compare with torch.nn.Transformer.
void run_bench_seq2seq(const BenchFlags& f) {
  set_num_threads(f.threads);
  const Precision precision = bench_precision(f);
  const int64_t length = f.model.block - 1;
  if (length < 1) throw UsageError("--block: an encoder-decoder needs at least 2 positions");
  nn::EncoderDecoderConfig config = f.model.encoder_decoder_config();
  config.vocab_size = f.vocab + 3;  // at most: --vocab characters and <pad>, <s>, </s>
  // Before the pairs, model and optimiser state exist: a shape the machine cannot hold is
  // refused by its size, in the flags' words.
  check_memory_in_flag_terms(train::estimate_training_memory(config, f.batch, "adamw"), kActivationFlags,
                             kBenchModelFlags);
  Generator gen(f.seed);
  std::string text;
  const auto random_string = [&] {
    std::u32string s(static_cast<size_t>(length), U'a');
    for (char32_t& c : s) c = 0x4E00 + static_cast<char32_t>(gen.randint(f.vocab));  // any vocabulary size
    return data::encode_utf8(s);
  };
  for (int i = 0; i < 4096; ++i) text += random_string() + '\t' + random_string() + '\n';
  const auto pairs = data::parse_pairs(text, "random pairs");
  const data::CharTokenizer tokenizer = data::fit_pair_tokenizer(pairs);
  config.vocab_size = tokenizer.vocab_size();
  const data::PairDataset dataset(pairs, tokenizer, f.model.block, 0.1, "random pairs");
  nn::EncoderDecoder model(config, f.seed);
  train::Trainer trainer(std::make_unique<train::PairObjective>(model, dataset), bench_options(f));
  const TimedSteps timed = time_steps(trainer, f.warmup, f.steps, f.profile);
  const StepTimes times = step_times(timed);
  const int64_t tokens = f.batch * (2 * length + 1);  // source and target positions per step
  const double tokens_per_s = static_cast<double>(tokens) / (times.median_ms / 1000.0);
  const double rss = peak_rss_mb();
  if (f.json) {
    json j = {{"tokens_per_s", tokens_per_s},
              {"peak_rss_mb", rss},
              {"params", model.num_parameters()},
              {"steps", f.steps},
              {"warmup", f.warmup},
              {"final_loss", timed.last_loss},
              {"config",
               {{"arch", "encoder-decoder"}, {"layers", config.encoder_layers},
                {"heads", config.encoder_attention_heads}, {"d_model", config.d_model},
                {"ffn_dim", config.encoder_ffn_dim}, {"source_length", length},
                {"target_length", length + 1}, {"batch", f.batch},
                {"vocab", config.vocab_size}}}};
    j.update(step_times_json(times));
    j.update(run_settings_json());
    j.update(products_json(precision));
    if (f.profile) j["profile"] = profile_json(timed.profile, f.steps);
    fmt::print("{}\n", j.dump());
    return;
  }
  fmt::print("tinygpt bench: encoder-decoder, {} + {} layers, {}, d_model {}, feed-forward {}, "
             "batch {} of {} source and {} target positions, vocab {}\n",
             config.encoder_layers, config.decoder_layers,
             train::count_of(config.encoder_attention_heads, "head"), config.d_model,
             config.encoder_ffn_dim, f.batch, length, length + 1, config.vocab_size);
  fmt::print("  parameters      {}\n", model.num_parameters());
  print_run_settings();
  print_products(precision);
  fmt::print("  steps           {} timed after {} warm-up\n", f.steps, f.warmup);
  print_step_times(times);
  fmt::print("  tokens/s        {:.0f}\n  peak RSS        {:.1f} MB\n  final loss      {:.6f}\n",
             tokens_per_s, rss, timed.last_loss);
  if (f.profile) print_profile(timed.profile, f.steps);
}

void run_bench(const BenchFlags& f, const CLI::App& cmd) {
  f.model.check(f.arch, cmd);  // the shapes and flags train refuses, in the same words
  if (f.arch == "encoder-decoder") {
    if (cmd.count("--data") > 0) {
      throw UsageError("--data: --arch encoder-decoder times random pairs; it takes no text");
    }
    if (cmd.count("--peak-size") > 0) {
      throw UsageError("--peak-size: --arch encoder-decoder reports no MFU, so it measures no product rate");
    }
    return run_bench_seq2seq(f);
  }
  if (cmd.count("--data") > 0 && cmd.count("--vocab") > 0) {
    throw UsageError("--vocab: --data sets the vocabulary, to the text's characters");
  }
  set_num_threads(f.threads);
  const Precision precision = bench_precision(f);
  std::vector<int64_t> tokens;
  int64_t vocab = f.vocab;
  std::string source = "synthetic random tokens";
  if (!f.data.empty()) {
    const std::string text = data::load_text(f.data);
    const auto tokenizer = data::CharTokenizer::fit(text);
    tokens = tokenizer.encode(text);
    vocab = tokenizer.vocab_size();
    source = data::absolute_source(f.data);
  } else {
    tokens = synthetic_tokens(vocab, f.model.block, f.seed);
  }
  check_memory_in_flag_terms(train::estimate_training_memory(f.model.config(vocab), f.batch, "adamw"),
                             kActivationFlags, f.data.empty() ? kBenchModelFlags : kModelFlags);
  // A text too short for --block is named, in the flags' terms.
  const data::TextDataset dataset = [&] {
    try {
      return data::TextDataset(std::move(tokens), f.model.block, 0.1);
    } catch (const ValueError& e) {
      throw ValueError(fmt::format("{}: {}", source, in_flag_terms(e)));
    }
  }();
  nn::GPT model(f.model.config(vocab, f.seed), f.seed);

  train::Trainer trainer(model, dataset, bench_options(f));

  const nn::GPTConfig& cfg = model.config();
  const int64_t tokens_per_step = f.batch * cfg.block_size;
  const int64_t n_params = model.num_parameters();
  const int64_t n_matmul_params = train::matmul_parameter_count(cfg);
  const double flops_per_token = train::training_flops_per_token(cfg);
  const double flops_per_step = flops_per_token * static_cast<double>(tokens_per_step);

  const Peaks before = probe_peaks();
  if (precision == Precision::bf16 && !before.bf16) {
    throw ValueError("bench --precision bf16: no bf16 peak to measure MFU against on this CPU");
  }
  const TimedSteps timed = time_steps(trainer, f.warmup, f.steps, f.profile);
  const StepTimes times = step_times(timed);
  const MemoryStats& end = timed.end;
  const double rss = peak_rss_mb();  // before the product probe's buffers
  empty_cache();
  const double products = f.peak_size > 0 ? train::measure_f32_products(f.peak_size) : NAN;
  const Peaks after = probe_peaks();
  const train::MachinePeak f32_peak = train::higher_reading(before.f32, after.f32);
  const std::optional<train::MachinePeak> bf16_peak =
      before.bf16 ? std::optional(train::higher_reading(*before.bf16, *after.bf16)) : std::nullopt;
  // MFU against the peak of the units the products run on: the CPU's bf16 units (dot products or
  // AMX tiles), or the f32 FMAs (f32, and bf16 operands widened where the bf16 units are the
  // slower, bf16_products()).
  const bool on_bf16_units =
      precision == Precision::bf16 && bf16_products() != Bf16Products::f32_fma;
  const double peak = on_bf16_units ? bf16_peak->gflops : f32_peak.gflops;
  // The probe's products run in f32 whatever --precision is: they are judged by the f32 peak.
  const std::string slow_note = train::slow_products_note(products, f32_peak.gflops);

  const double ms = times.median_ms;
  const double tokens_per_s = static_cast<double>(tokens_per_step) / (ms / 1000.0);
  const double gflops = flops_per_step / (ms / 1000.0) / 1e9;
  const double mfu = train::model_flops_utilization(flops_per_step, ms / 1000.0, peak * 1e9);
  const int64_t steady_allocs = end.system_allocations - timed.warm.system_allocations;

  if (f.json) {
    json j = {
        {"tokens_per_s", tokens_per_s},
        {"gflops", gflops},
        {"peak_gflops", peak},
        {"peak_gflops_f32", f32_peak.gflops},
        {"peak_gflops_bf16", bf16_peak ? json(bf16_peak->gflops) : json(nullptr)},
        {"peak_kernel_f32", f32_peak.kernel},
        {"peak_kernel_bf16", bf16_peak ? json(bf16_peak->kernel) : json(nullptr)},
        {"peak_gflops_f32_probes", json::array({before.f32.gflops, after.f32.gflops})},
        {"peak_gflops_bf16_probes",
         bf16_peak ? json::array({before.bf16->gflops, after.bf16->gflops}) : json(nullptr)},
        {"gemm_gflops", std::isnan(products) ? json(nullptr) : json(products)},
        {"slow_products", slow_note.empty() ? json(nullptr) : json(slow_note)},
        {"mfu", mfu},
        {"peak_rss_mb", rss},
        {"steps", f.steps},
        {"warmup", f.warmup},
        {"params", n_params},
        {"flops_per_step", flops_per_step},
        {"final_loss", timed.last_loss},
        {"kv_cache_bytes", model.kv_cache_bytes(model.kv_cache_positions(cfg.block_size))},
        {"recurrent_state_bytes", model.recurrent_state_bytes()},
        {"config",
         {{"layers", cfg.n_layer}, {"heads", cfg.n_head}, {"kv_heads", cfg.kv_heads()},
          {"pos", nn::position_embedding_name(cfg.position_embedding)}, {"d_model", cfg.n_embd},
          {"block", cfg.block_size}, {"batch", f.batch}, {"vocab", vocab},
          {"attention", cfg.attention.str()}}},
        {"allocator",
         {{"system_allocations", end.system_allocations},
          {"system_allocations_timed_steps", steady_allocs},
          {"cache_hits", end.cache_hits},
          {"peak_bytes_in_use", end.peak_bytes_in_use},
          {"bytes_cached", end.bytes_cached}}},
    };
    j.update(step_times_json(times));
    j.update(run_settings_json());
    j.update(products_json(precision));
    if (f.profile) j["profile"] = profile_json(timed.profile, f.steps);
    fmt::print("{}\n", j.dump());
    return;
  }

  constexpr double kMiB = 1024.0 * 1024.0;
  fmt::print("tinygpt bench: {}, {} ({} key/value), d_model {}, context {}, {} "
             "positions, batch {}, vocab {} ({})\n",
             train::count_of(cfg.n_layer, "layer"), train::count_of(cfg.n_head, "head"), cfg.kv_heads(), cfg.n_embd, cfg.block_size,
             nn::position_embedding_name(cfg.position_embedding), f.batch, vocab, source);
  fmt::print("  parameters      {} ({} in products)\n", n_params, n_matmul_params);
  print_run_settings();
  print_products(precision);
  fmt::print("  steps           {} timed after {} warm-up\n", f.steps, f.warmup);
  print_step_times(times);
  fmt::print("  tokens/s        {:.0f}\n", tokens_per_s);
  fmt::print("  model FLOPs     {:.3f} GFLOP/step = (6 N + 12 L C T) x B T, N = {}\n",
             flops_per_step / 1e9, n_matmul_params);
  fmt::print("  effective       {:.1f} GFLOP/s\n", gflops);
  fmt::print("  machine peak    {:.1f} GFLOP/s f32 ({}, {} threads)", f32_peak.gflops, f32_peak.kernel,
             num_threads());
  if (bf16_peak) fmt::print(", {:.1f} bf16 ({})", bf16_peak->gflops, bf16_peak->kernel);
  fmt::print("\n                  the higher of two probes, before and after the steps: f32 {:.1f} "
             "and {:.1f}",
             before.f32.gflops, after.f32.gflops);
  if (bf16_peak) fmt::print(", bf16 {:.1f} and {:.1f}", before.bf16->gflops, after.bf16->gflops);
  fmt::print("\n");
  if (f.peak_size > 0) {
    fmt::print("  f32 products    {:.1f} GFLOP/s = {:.2f} of the peak ({}^3 through matmul)\n",
               products, products / f32_peak.gflops, f.peak_size);
  }
  fmt::print("  MFU             {:.3f} (of the {} peak)\n", mfu, on_bf16_units ? "bf16" : "f32");
  if (!slow_note.empty()) fmt::print("  note            {}\n", slow_note);
  fmt::print("  peak RSS        {:.1f} MB\n", rss);
  fmt::print("  KV cache        {} bytes at context {}, batch 1 (2 x layers x kv_heads x T x d_head "
             "x 4)\n",
             model.kv_cache_bytes(cfg.block_size), cfg.block_size);
  fmt::print("  allocator       {} system allocations ({} during the timed steps), {} cache hits, "
             "peak in use {:.1f} MiB, cached {:.1f} MiB\n",
             end.system_allocations, steady_allocs, end.cache_hits,
             static_cast<double>(end.peak_bytes_in_use) / kMiB,
             static_cast<double>(end.bytes_cached) / kMiB);
  fmt::print("  final loss      {:.6f}\n", timed.last_loss);
  if (f.profile) print_profile(timed.profile, f.steps);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time full training steps (forward, backward, grad clip, AdamW) and report ms/step, "
      "tokens/s, GFLOP/s, MFU against the machine's measured peak, peak RSS and allocator stats");
  cmd->footer(
      "Model FLOPs per token are nanoGPT's estimate, 6 N + 12 L C T (N: parameters without the "
      "position embedding; L layers, C width, T context); MFU is that rate over the machine's f32 "
      "peak, measured by multiply-adds on registers on every thread (no library's kernel choice "
      "can lower it). The f32 products' own rate is measured on --peak-size square matrices "
      "through the same OpenMP-split matmul; a line says so when it is below half the peak.");
  set_memory_advice(*cmd, fmt::format("lower {} (activations), {} (model) or --peak-size (the "
                                      "product probe)", kActivationFlags, kBenchModelFlags));
  cmd->add_option("--arch", flags->arch,
                  "gpt, or encoder-decoder: its steps on random pairs whose source and target fill "
                  "--block positions (ms/step, tokens/s, peak RSS, --profile; the model flags --layers, "
                  "--heads, --d-model, --block, --dropout)")
      ->check(CLI::IsMember({"gpt", "encoder-decoder"}))->capture_default_str();
  flags->model.add_to(*cmd);
  cmd->add_option("--batch", flags->batch, "sequences per step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--vocab", flags->vocab, "vocabulary of the synthetic tokens (65: Shakespeare's)")->check(CLI::Range(int64_t{1}, int64_t{1} << 24))->capture_default_str();
  cmd->add_option("--steps", flags->steps, "timed steps")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--warmup", flags->warmup, "untimed steps first (caches, allocator)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20))->capture_default_str();
  add_threads_flag(*cmd, flags->threads);
  cmd->add_option("--data", flags->data, "train on this UTF-8 text file's characters instead of synthetic tokens (sets the vocabulary)")->type_name("FILE");
  cmd->add_option("--seed", flags->seed, "seed for initialisation and batches")->check(seed_value())->capture_default_str();
  cmd->add_option("--peak-size", flags->peak_size, "side of the square f32 product whose rate is measured through matmul (0: skip; gpt only)")->check(CLI::Range(int64_t{0}, int64_t{16384}))->capture_default_str();
  cmd->add_option("--precision", flags->precision,
                  "precision of the products: f32, or bf16 (bf16 inputs, f32 accumulation; all "
                  "else f32, as torch.autocast); MFU is against the peak of the units that run the "
                  "products: the bf16 dot products, or the f32 FMAs where those are faster "
                  "(TINYGPT_BF16_PRODUCTS)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--profile", flags->profile, "also print the time per op (forward and backward) of the timed steps");
  cmd->add_flag("--json", flags->json, "print one JSON object instead of the table");
  cmd->callback([flags, cmd] { run_bench(*flags, *cmd); });
}

}  // namespace tinygpt::cli
