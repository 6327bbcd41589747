#include "tinygpt/train/bench.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include "tinygpt/autograd/gemm_backend.hpp"
#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/profile.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/train/flop_estimate.hpp"
#include "tinygpt/train/machine_peak.hpp"
#include "step_profile.hpp"

namespace tinygpt::train {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Timed steps of a trainer after untimed warm-up ones: the median, fastest and slowest step, the
// last loss, the allocator's counts before and after them, and (with `profile`) each op's share.
struct TimedSteps {
  double median_ms = NAN, min_ms = NAN, max_ms = NAN;
  double last_loss = NAN;
  MemoryStats warm, end;
  StepProfile profile;
};
TimedSteps time_steps(Trainer& trainer, const BenchSettings& s) {
  for (int64_t i = 0; i < s.warmup; ++i) trainer.step();
  TimedSteps out;
  std::vector<double> seconds;
  out.warm = memory_stats();
  set_op_profiling(s.profile);
  for (int64_t i = 0; i < s.steps; ++i) {
    const auto start = Clock::now();
    out.last_loss = trainer.step().loss;
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  set_op_profiling(false);
  out.end = memory_stats();
  if (s.profile) out.profile = read_step_profile();
  const auto [fastest, slowest] = std::minmax_element(seconds.begin(), seconds.end());
  out.median_ms = 1000.0 * median(seconds);
  out.min_ms = 1000.0 * *fastest;
  out.max_ms = 1000.0 * *slowest;
  return out;
}

// The machine's peaks from one probe of each; the steps are put against the higher of a probe
// before them and one after (higher_reading).
struct Peaks {
  MachinePeak f32;
  std::optional<MachinePeak> bf16;  // whether the CPU has bf16 units does not change
};
Peaks probe_peaks() { return {measure_f32_peak(), measure_bf16_peak()}; }

// What a family with a FLOP estimate reports beside the step times.
struct Utilization {
  Peaks before, after;
  MachinePeak f32;
  std::optional<MachinePeak> bf16;
  bool on_bf16_units = false;
  double products = NAN;  // the f32 product probe's GFLOP/s (NaN: not measured)
  std::string slow_note;
  double flops_per_step = 0.0, gflops = 0.0, peak = 0.0, mfu = 0.0;
};
Utilization utilization(const Peaks& before, const TimedSteps& timed, double flops_per_step,
                        Precision precision, int64_t peak_size) {
  Utilization u;
  u.before = before;
  empty_cache();
  u.products = peak_size > 0 ? measure_f32_products(peak_size) : NAN;
  u.after = probe_peaks();
  u.f32 = higher_reading(before.f32, u.after.f32);
  if (before.bf16) u.bf16 = higher_reading(*before.bf16, *u.after.bf16);
  // MFU against the peak of the units the products run on: the CPU's bf16 units (dot products or
  // AMX tiles), or the f32 FMAs (f32, and bf16 operands widened where the bf16 units are the
  // slower, bf16_products()).
  u.on_bf16_units = precision == Precision::bf16 && bf16_products() != Bf16Products::f32_fma;
  u.peak = u.on_bf16_units ? u.bf16->gflops : u.f32.gflops;
  // The probe's products run in f32 whatever the precision is: they are judged by the f32 peak.
  u.slow_note = slow_products_note(u.products, u.f32.gflops);
  u.flops_per_step = flops_per_step;
  u.gflops = flops_per_step / (timed.median_ms / 1000.0) / 1e9;
  u.mfu = model_flops_utilization(flops_per_step, timed.median_ms / 1000.0, u.peak * 1e9);
  return u;
}

json or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json utilization_json(const Utilization& u, const TimedSteps& timed) {
  const auto bf16_gflops = [](const std::optional<MachinePeak>& p) {
    return p ? std::optional<double>(p->gflops) : std::nullopt;
  };
  return {{"gflops", u.gflops},
          {"peak_gflops", u.peak},
          {"peak_gflops_f32", u.f32.gflops},
          {"peak_gflops_bf16", or_null(bf16_gflops(u.bf16))},
          {"peak_kernel_f32", u.f32.kernel},
          {"peak_kernel_bf16", u.bf16 ? json(u.bf16->kernel) : json(nullptr)},
          {"peak_gflops_f32_probes", json::array({u.before.f32.gflops, u.after.f32.gflops})},
          {"peak_gflops_bf16_probes",
           u.bf16 ? json::array({u.before.bf16->gflops, u.after.bf16->gflops}) : json(nullptr)},
          {"gemm_gflops", std::isnan(u.products) ? json(nullptr) : json(u.products)},
          {"slow_products", u.slow_note.empty() ? json(nullptr) : json(u.slow_note)},
          {"mfu", u.mfu},
          {"flops_per_step", u.flops_per_step},
          {"allocator",
           {{"system_allocations", timed.end.system_allocations},
            {"system_allocations_timed_steps",
             timed.end.system_allocations - timed.warm.system_allocations},
            {"cache_hits", timed.end.cache_hits},
            {"peak_bytes_in_use", timed.end.peak_bytes_in_use},
            {"bytes_cached", timed.end.bytes_cached}}}};
}

json cpu_json() {
  const CpuIdentity cpu = cpu_identity();
  return {{"vendor", cpu.vendor}, {"family", cpu.family}, {"model", cpu.model}, {"brand", cpu.brand}};
}

std::string cpu_text() {
  const CpuIdentity cpu = cpu_identity();
  return fmt::format("  cpu             {} family {} model {} ({})\n", cpu.vendor, cpu.family, cpu.model,
                     cpu.brand);
}

// How the steps ran: the threads, their idle spinning (which the environment may choose) and
// whether subnormals are flushed -- each moves the timings; and what ran the products.
json settings_json(Precision precision) {
  const GemmBackend backend = gemm_backend(DType::f32);
  return {{"threads", num_threads()},
          {"omp_wait_policy", env_or("OMP_WAIT_POLICY", "")},
          {"gomp_spincount", env_or("GOMP_SPINCOUNT", "")},
          {"flush_denormals", flush_denormals()},
          {"precision", precision_name(precision)},
          {"bf16_products", precision == Precision::bf16 ? json(bf16_products_name(bf16_products()))
                                                          : json(nullptr)},
          {"gemm_backend", backend.library},
          {"gemm_kernel", backend.kernel},
          {"own_loops", own_loops_isa()},
          {"cpu", cpu_json()}};
}

std::string settings_text(Precision precision) {
  const GemmBackend backend = gemm_backend(DType::f32);
  const std::string kind =
      precision == Precision::f32
          ? "f32"
          : fmt::format("bf16 inputs, f32 accumulation on {} ({})",
                        bf16_products_description(bf16_products()),
                        bf16_products_name(bf16_products()));
  return fmt::format(
      "  threads         {} (OpenMP, GOMP_SPINCOUNT={}, OMP_WAIT_POLICY={}; each product "
      "single-threaded inside it){}\n  products        {}: {} ({} kernel)\n"
      "  own loops       {}\n{}",
      num_threads(), env_or("GOMP_SPINCOUNT", "unset"), env_or("OMP_WAIT_POLICY", "unset"),
      flush_denormals() ? "; subnormals flushed to zero" : "", kind, backend.library, backend.kernel,
      own_loops_isa(), cpu_text());
}

std::string utilization_text(const Utilization& u, int64_t matmul_parameters, int64_t peak_size) {
  std::string out = fmt::format(
      "  model FLOPs     {:.3f} GFLOP/step = (6 N + 12 L C T) x B T, N = {}\n"
      "  effective       {:.1f} GFLOP/s\n"
      "  machine peak    {:.1f} GFLOP/s f32 ({}, {} threads)",
      u.flops_per_step / 1e9, matmul_parameters, u.gflops, u.f32.gflops, u.f32.kernel, num_threads());
  if (u.bf16) out += fmt::format(", {:.1f} bf16 ({})", u.bf16->gflops, u.bf16->kernel);
  out += fmt::format("\n                  the higher of two probes, before and after the steps: "
                     "f32 {:.1f} and {:.1f}", u.before.f32.gflops, u.after.f32.gflops);
  if (u.bf16) out += fmt::format(", bf16 {:.1f} and {:.1f}", u.before.bf16->gflops, u.after.bf16->gflops);
  out += "\n";
  if (peak_size > 0) {
    out += fmt::format("  f32 products    {:.1f} GFLOP/s = {:.2f} of the peak ({}^3 through matmul)\n",
                       u.products, u.products / u.f32.gflops, peak_size);
  }
  out += fmt::format("  MFU             {:.3f} (of the {} peak)\n", u.mfu, u.on_bf16_units ? "bf16" : "f32");
  if (!u.slow_note.empty()) out += fmt::format("  note            {}\n", u.slow_note);
  return out;
}

std::string memory_text(const StepShape& shape, const TimedSteps& timed, double rss) {
  constexpr double kMiB = 1024.0 * 1024.0;
  std::string out = fmt::format("  peak RSS        {:.1f} MB\n", rss);
  if (const auto& state = shape.inference) {
    out += fmt::format("  KV cache        {} bytes at context {}, batch 1 (2 x layers x kv_heads x "
                       "T x d_head x 4)\n", state->full_kv_cache_bytes, state->context);
  }
  if (!shape.flops) return out;
  const MemoryStats& end = timed.end;
  out += fmt::format("  allocator       {} system allocations ({} during the timed steps), {} cache "
                     "hits, peak in use {:.1f} MiB, cached {:.1f} MiB\n",
                     end.system_allocations, end.system_allocations - timed.warm.system_allocations,
                     end.cache_hits, static_cast<double>(end.peak_bytes_in_use) / kMiB,
                     static_cast<double>(end.bytes_cached) / kMiB);
  return out;
}

// The measurements of bench() and the shape they were taken on.
struct Measured {
  StepShape shape;
  int64_t params = 0;
  Precision precision = Precision::f32;
  TimedSteps timed;
  double rss = 0.0, tokens_per_s = 0.0;
  std::optional<Utilization> utilization;
};

// The peak the profile's products are put against: the one MFU uses.
double products_peak(const Measured& m) { return m.utilization ? m.utilization->peak : NAN; }

json report_json(const Measured& m, const BenchSettings& s) {
  json j = {{"tokens_per_s", m.tokens_per_s}, {"peak_rss_mb", m.rss},  {"params", m.params},
            {"steps", s.steps},               {"warmup", s.warmup},    {"final_loss", m.timed.last_loss},
            {"config", m.shape.config},
            {"ms_per_step", m.timed.median_ms}, {"ms_min", m.timed.min_ms}, {"ms_max", m.timed.max_ms}};
  j.update(settings_json(m.precision));
  if (m.utilization) j.update(utilization_json(*m.utilization, m.timed));
  if (const auto& state = m.shape.inference) {
    j["kv_cache_bytes"] = state->kv_cache_bytes;
    j["recurrent_state_bytes"] = state->recurrent_state_bytes;
  }
  if (s.profile) j.update(step_profile_json(m.timed.profile, s.steps, products_peak(m)));
  return j;
}

std::string report_text(const Measured& m, const BenchSettings& s) {
  std::string out = fmt::format("tinygpt bench: {}\n  parameters      {}", m.shape.title, m.params);
  if (m.shape.flops) out += fmt::format(" ({} in products)", m.shape.flops->matmul_parameters);
  out += "\n" + settings_text(m.precision);
  out += fmt::format("  steps           {} timed after {} warm-up\n"
                     "  ms/step         {:.2f} median (min {:.2f}, max {:.2f})\n"
                     "  tokens/s        {:.0f}\n",
                     s.steps, s.warmup, m.timed.median_ms, m.timed.min_ms, m.timed.max_ms, m.tokens_per_s);
  if (m.utilization) out += utilization_text(*m.utilization, m.shape.flops->matmul_parameters, s.peak_size);
  out += memory_text(m.shape, m.timed, m.rss);
  out += fmt::format("  final loss      {:.6f}\n", m.timed.last_loss);
  if (s.profile) out += step_profile_text(m.timed.profile, s.steps, products_peak(m));
  return out;
}

}  // namespace

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

TrainOptions BenchSettings::train_options() const {
  TrainOptions options;
  options.batch = batch;
  options.steps = warmup + steps;
  options.warmup = std::min<int64_t>(options.steps, 100);
  options.eval_every = options.steps + 1;
  options.seed = seed;
  options.precision = precision;
  return options;
}

BenchReport bench(Task& task, const BenchSettings& settings, const std::string& data_name) {
  Measured m;
  m.shape = task.step_shape(settings.batch, data_name);
  m.params = task.model().num_parameters();
  m.precision = parse_precision(settings.precision);
  Trainer trainer(task.make_objective(), settings.train_options());
  std::optional<Peaks> before;
  if (m.shape.flops) {
    before = probe_peaks();
    if (m.precision == Precision::bf16 && !before->bf16) {
      throw SettingError(Operation("bench"), {named("precision", settings.precision),
                                              ": no bf16 peak to measure MFU against on this CPU"});
    }
  }
  m.timed = time_steps(trainer, settings);
  m.rss = peak_rss_mb();  // before the product probe's and the profile's buffers
  if (settings.profile) time_products_alone(m.timed.profile, m.precision);
  const double tokens_per_step = static_cast<double>(settings.batch * m.shape.positions_per_row);
  m.tokens_per_s = tokens_per_step / (m.timed.median_ms / 1000.0);
  if (before) {
    m.utilization = utilization(*before, m.timed, m.shape.flops->per_token * tokens_per_step,
                                m.precision, settings.peak_size);
  }
  return {report_json(m, settings), report_text(m, settings)};
}

}  // namespace tinygpt::train
