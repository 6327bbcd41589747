// The peak MFU is measured against: positive, bf16 exactly where the CPU has avx512_bf16, and the
// note on slow products that names what it can see.
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "tinygpt/autograd/gemm_backend.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/train/machine_peak.hpp"

using namespace tinygpt;

TEST_CASE("the machine's f32 and bf16 peaks are measured on registers", "[train][peak]") {
  const train::MachinePeak f32 = train::measure_f32_peak();
  CHECK(f32.gflops > 1.0);
  CHECK_FALSE(f32.kernel.empty());
  const auto bf16 = train::measure_bf16_peak();
  CHECK(bf16.has_value() == (train::cpu_has_avx512_bf16() || train::amx_usable()));
  if (bf16) {
    CHECK(bf16->kernel == (train::amx_usable() ? "amx_bf16 tdpbf16ps" : "avx512_bf16 vdpbf16ps"));
    // Two products per f32 lane and instruction: about twice f32's, whatever the load.
    CHECK(bf16->gflops > 1.0);
  }
  CHECK(train::measure_f32_products(96) > 0.0);
}

TEST_CASE("the f32 products name oneDNN and its kernel, f64 OpenBLAS", "[train][peak]") {
  const GemmBackend f32 = gemm_backend(DType::f32);
  CHECK(f32.library.rfind("oneDNN ", 0) == 0);
  CHECK_FALSE(f32.kernel.empty());
  CHECK(gemm_backend(DType::f64).library == "OpenBLAS");
  // The CPU has avx512_bf16 exactly when oneDNN runs bf16 products natively here (unless an
  // environment variable caps oneDNN's instruction set).
  if (std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr && std::getenv("DNNL_MAX_CPU_ISA") == nullptr) {
    CHECK(bf16_unsupported_reason().empty() == train::cpu_has_avx512_bf16());
  }
}

TEST_CASE("slow products get one line naming the cause it can see", "[train][peak]") {
  CHECK(train::slow_products_note(300.0, 400.0).empty());  // 0.75 of the peak: nothing to say
  CHECK(train::slow_products_note(200.0, 400.0).empty());  // half: still nothing
  ::setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  const std::string capped = train::slow_products_note(150.0, 400.0);
  ::unsetenv("ONEDNN_MAX_CPU_ISA");
  CHECK_THAT(capped, Catch::Matchers::Contains("150 GFLOP/s, 0.38 of the machine's peak 400"));
  CHECK_THAT(capped, Catch::Matchers::Contains("ONEDNN_MAX_CPU_ISA=AVX2"));
  CHECK(capped.find('\n') == std::string::npos);
}
