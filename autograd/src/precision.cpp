#include "tinygpt/autograd/precision.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <atomic>
#include <cstdlib>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt {
namespace {
std::atomic<Precision> g_precision{Precision::f32};
}

const char* precision_name(Precision precision) {
  return precision == Precision::bf16 ? "bf16" : "f32";
}

std::optional<Precision> precision_from_name(const std::string& name) {
  if (name == "f32") return Precision::f32;
  if (name == "bf16") return Precision::bf16;
  return std::nullopt;
}

Precision parse_precision(const std::string& name) {
  if (const auto precision = precision_from_name(name)) return *precision;
  throw ValueError(fmt::format("precision: '{}' is not one of f32, bf16", name));
}

std::string bf16_unsupported_reason() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if (isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx) return {};
  std::string cap;
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    if (const char* value = std::getenv(name)) cap = fmt::format(" ({}={})", name, value);
  }
  return fmt::format("bf16 products need the avx512_bf16 instructions, which oneDNN does not use "
                     "on this CPU{}",
                     cap);
}

void set_matmul_precision(Precision precision) {
  if (precision == Precision::bf16) {
    const std::string reason = bf16_unsupported_reason();
    if (!reason.empty()) throw ValueError(reason);
  }
  g_precision.store(precision, std::memory_order_relaxed);
}

Precision matmul_precision() { return g_precision.load(std::memory_order_relaxed); }

PrecisionGuard::PrecisionGuard(Precision precision) : saved_(matmul_precision()) {
  set_matmul_precision(precision);
}

PrecisionGuard::~PrecisionGuard() { g_precision.store(saved_, std::memory_order_relaxed); }

}  // namespace tinygpt
