#pragma once
// The machine's arithmetic peak, the ceiling MFU is reported against: every OpenMP thread runs
// independent multiply-adds on registers only, so neither memory nor any library's kernel choice
// (e.g. $OPENBLAS_CORETYPE picking a 256-bit kernel on an AVX-512 CPU) can lower it.
#include <cstdint>
#include <optional>
#include <string>

namespace tinygpt::train {

struct MachinePeak {
  double gflops = 0.0;  // over all OpenMP threads
  std::string kernel;   // the instruction measured, e.g. "avx512f vfmadd (f32)"
};

// f32 multiply-add peak: AVX-512 FMA, else AVX2 FMA, else SSE multiply and add.
MachinePeak measure_f32_peak();

// bf16 peak: AMX's tiles (tdpbf16ps) where amx_usable(), else the bf16 dot products (vdpbf16ps:
// bf16 pairs accumulated in f32), or nothing when the CPU has no avx512_bf16.
std::optional<MachinePeak> measure_bf16_peak();

// The higher of two readings of one peak, probed seconds apart: a neighbour on a shared host can
// hold the cores' units for the whole of one probe (docs/PERFORMANCE.md, "The machine peak and
// MFU"), and can only lower a reading. bench probes around its steps, train --verbose around its
// products.
MachinePeak higher_reading(MachinePeak a, const MachinePeak& b);

bool cpu_has_avx512_bf16();

// Which CPU this is, from CPUID: a peak and a step time mean something only beside it (one cloud
// name can stand for guests of different generations, e.g. AMD EPYC family 25, Zen 4, with
// 256-bit multiply-add units, and family 26, Zen 5, with 512-bit ones: twice the f32 peak).
struct CpuIdentity {
  std::string vendor;  // e.g. "AuthenticAMD", "GenuineIntel"
  int family = 0;      // the display family and model, as /proc/cpuinfo gives them
  int model = 0;
  std::string brand;   // the brand string, as the host chose to show it
};
CpuIdentity cpu_identity();

// The CPU has amx_tile and amx_bf16 and Linux grants this process their state: autograd's
// amx_tiles_usable() (precision.hpp), which the fused attention's AMX products ask too.
bool amx_usable();

// GFLOP/s of one f32 (n x n) @ (n x n) product through tinygpt's matmul op, i.e. the f32 backend
// split over the OpenMP team exactly as training's products are: the best of 5 after a warm-up.
double measure_f32_products(int64_t n);

// One line when products measured at `gemm_gflops` run below half of `peak_gflops`, naming
// the cause when it can be seen (an environment variable capping the library's instruction set,
// or the library picking a narrower kernel than the CPU has); empty when they run near the peak.
std::string slow_products_note(double gemm_gflops, double peak_gflops);

}  // namespace tinygpt::train
