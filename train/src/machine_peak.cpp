#include "tinygpt/train/machine_peak.hpp"

#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "tinygpt/autograd/gemm_backend.hpp"
#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::train {
namespace {

// Twelve independent accumulators cover the multiply-add latency (4 cycles) times the two
// issue ports, so the loop runs at the units' throughput.
constexpr int kChains = 12;

__attribute__((target("avx512f"))) float fma_avx512(long iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m512 scale = _mm512_set1_ps(0.9999f), shift = _mm512_set1_ps(1e-4f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  float out[16];
  _mm512_storeu_ps(out, acc[0]);
  return out[0];
}

__attribute__((target("avx2,fma"))) float fma_avx2(long iterations) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m256 scale = _mm256_set1_ps(0.9999f), shift = _mm256_set1_ps(1e-4f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], scale, shift);
  }
  float out[8];
  for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  _mm256_storeu_ps(out, acc[0]);
  return out[0];
}

float mul_add_sse(long iterations) {
  __m128 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m128 scale = _mm_set1_ps(0.9999f), shift = _mm_set1_ps(1e-4f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], scale), shift);
  }
  return _mm_cvtss_f32(acc[0]);
}

__attribute__((target("avx512f,avx512bf16"))) float dot_bf16(long iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  // bf16 pairs (1.0, 1.0) and (2^-15, 2^-15): small steps that keep the sums finite.
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3800);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  float out[16];
  _mm512_storeu_ps(out, acc[0]);
  return out[0];
}

// AMX: a 2 x 2 block of f32 accumulator tiles (16 x 16 each, tmm0-3) fed by two tiles of bf16
// pairs from each operand (16 x 32, tmm4-7). Each tdpbf16ps is 16 x 16 x 32 multiply-adds; four
// independent ones cover the instruction's latency. Every thread configures its own tiles.

__attribute__((target("amx-tile,amx-bf16"))) float dot_amx(long iterations) {
  const AmxTiles tiles;
  // bf16 1.0 against 2^-15: small steps that keep the sums finite.
  alignas(64) uint16_t ones[16 * 32], small[16 * 32];
  std::fill(std::begin(ones), std::end(ones), uint16_t{0x3f80});
  std::fill(std::begin(small), std::end(small), uint16_t{0x3800});
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, small, 64);
  _tile_loadd(7, small, 64);
  for (long it = 0; it < iterations; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float out[16 * 16];
  _tile_stored(0, out, 64);
  return out[0];
}

// The CPU time of the calling thread. A probe's round is timed by what each of its threads ran,
// not by the wall clock: on a shared host a thread waits descheduled for slices of several
// milliseconds, and a wall-clock round then reads a fraction of what the units do while they run.
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// One round of every OpenMP thread running `kernel(iterations)`: the team's rate (each thread's
// iterations over its own CPU seconds, summed) and the CPU seconds of its slowest thread.
struct Round {
  double iterations_per_second = 0.0;
  double seconds = 0.0;
};

template <class Kernel>
Round time_round(Kernel kernel, long iterations, volatile float& sink) {
  Round round;
#pragma omp parallel
  {
    const double start = thread_cpu_seconds();
    const float v = kernel(iterations);
    const double seconds = std::max(thread_cpu_seconds() - start, 1e-9);
#pragma omp critical
    {
      sink = sink + v;
      round.iterations_per_second += static_cast<double>(iterations) / seconds;
      round.seconds = std::max(round.seconds, seconds);
    }
  }
  return round;
}

// The best of a few rounds of kRoundSeconds of CPU time each: a peak is what the units can do,
// and a round can only lose to the cache and the frequency the other work on the host leaves it. Rounds are
// sized by time, not by a count of instructions: the same count takes twice as long on a CPU
// that runs vdpbf16ps at half rate, and many times longer in a sanitizer build, whose kernels
// keep their accumulators in memory. Short rounds of growing size size them and warm the units up.
template <class Kernel>
double measure(Kernel kernel, double flops_per_iteration) {
  constexpr double kRoundSeconds = 0.03;
  volatile float sink = 0.0f;  // keeps the loops from being optimised away
  long iterations = 1L << 12;
  double seconds = time_round(kernel, iterations, sink).seconds;
  while (seconds < kRoundSeconds / 8 && iterations < (1L << 40)) {
    iterations *= 4;
    seconds = time_round(kernel, iterations, sink).seconds;
  }
  iterations = std::max(1L, static_cast<long>(iterations * (kRoundSeconds / seconds)));
  double best = 0.0;
  for (int round = 0; round < 5; ++round) {
    best = std::max(best, time_round(kernel, iterations, sink).iterations_per_second * flops_per_iteration / 1e9);
  }
  return best;
}

}  // namespace

bool amx_usable() { return amx_tiles_usable(); }

MachinePeak higher_reading(MachinePeak a, const MachinePeak& b) {
  a.gflops = std::max(a.gflops, b.gflops);
  return a;
}

bool cpu_has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__builtin_cpu_supports("avx512f") || __get_cpuid_count(7, 1, &a, &b, &c, &d) == 0) {
    return false;
  }
  return (a & (1u << 5)) != 0;  // CPUID.(7,1):EAX bit 5 = AVX512_BF16
}

namespace {

// The four bytes of a CPUID register, lowest first: how CPUID spells its vendor and brand strings.
void append_register_bytes(std::string& text, unsigned word) {
  for (int byte = 0; byte < 4; ++byte) text += static_cast<char>((word >> (8 * byte)) & 0xff);
}

}  // namespace

CpuIdentity cpu_identity() {
  CpuIdentity id;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return id;
  for (const unsigned word : {b, d, c}) append_register_bytes(id.vendor, word);
  __get_cpuid(1, &a, &b, &c, &d);
  const int base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
  id.family = base_family == 0xf ? base_family + static_cast<int>((a >> 20) & 0xff) : base_family;
  id.model = base_family == 0x6 || base_family == 0xf ? base_model + static_cast<int>(((a >> 16) & 0xf) << 4)
                                                      : base_model;
  unsigned top = 0;
  __get_cpuid(0x80000000, &top, &b, &c, &d);
  if (top < 0x80000004) return id;
  std::string brand;
  for (unsigned leaf = 0x80000002; leaf <= 0x80000004; ++leaf) {
    unsigned r[4] = {};
    __get_cpuid(leaf, &r[0], &r[1], &r[2], &r[3]);
    for (const unsigned word : r) append_register_bytes(brand, word);
  }
  brand.resize(brand.find('\0') == std::string::npos ? brand.size() : brand.find('\0'));
  const size_t first = brand.find_first_not_of(' '), last = brand.find_last_not_of(' ');
  if (first != std::string::npos) id.brand = brand.substr(first, last - first + 1);
  return id;
}

MachinePeak measure_f32_peak() {
  if (__builtin_cpu_supports("avx512f")) {
    return {measure(fma_avx512, kChains * 16 * 2.0), "avx512f vfmadd (f32)"};
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {measure(fma_avx2, kChains * 8 * 2.0), "avx2 vfmadd (f32)"};
  }
  return {measure(mul_add_sse, kChains * 4 * 2.0), "sse mulps+addps (f32)"};
}

std::optional<MachinePeak> measure_bf16_peak() {
  if (amx_tiles_usable()) {
    return MachinePeak{measure(dot_amx, 4 * 16 * 16 * 32 * 2.0), "amx_bf16 tdpbf16ps"};
  }
  if (!cpu_has_avx512_bf16()) return std::nullopt;
  // 16 f32 lanes, each adding two bf16 products.
  return MachinePeak{measure(dot_bf16, kChains * 16 * 4.0), "avx512_bf16 vdpbf16ps"};
}

double measure_f32_products(int64_t n) {
  NoGradGuard no_grad;
  Generator gen(7);
  const Tensor a = Tensor::uniform({n, n}, gen, -1.0, 1.0);
  const Tensor b = Tensor::uniform({n, n}, gen, -1.0, 1.0);
  double best = 0.0;
  for (int round = 0; round < 6; ++round) {
    const auto start = std::chrono::steady_clock::now();
    const Tensor c = matmul(a, b);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (round > 0) best = std::max(best, 2.0 * std::pow(static_cast<double>(n), 3) / seconds / 1e9);
  }
  return best;
}

std::string slow_products_note(double gemm_gflops, double peak_gflops) {
  if (!(gemm_gflops < 0.5 * peak_gflops)) return {};
  const GemmBackend backend = gemm_backend(DType::f32);
  std::string cause;
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    if (const char* value = std::getenv(name)) {
      cause = fmt::format("{}={} caps {}'s kernels", name, value, backend.library);
    }
  }
  if (cause.empty() && __builtin_cpu_supports("avx512f") &&
      backend.kernel.rfind("avx512", 0) != 0) {
    cause = fmt::format("{} runs its {} kernel on this AVX-512 CPU", backend.library,
                        backend.kernel);
  }
  if (cause.empty()) cause = "no cause seen here: is another program using the cores?";
  return fmt::format("f32 products run at {:.0f} GFLOP/s, {:.2f} of the machine's peak {:.0f}: {}",
                     gemm_gflops, gemm_gflops / peak_gflops, peak_gflops, cause);
}

}  // namespace tinygpt::train
