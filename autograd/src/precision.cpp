#include "tinygpt/autograd/precision.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt {
namespace {
std::atomic<Precision> g_precision{Precision::f32};

bool intel_cpu() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return false;
  char vendor[12];
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  return std::memcmp(vendor, "GenuineIntel", 12) == 0;
}

Bf16Products default_bf16_products() {
  if (const char* value = std::getenv("TINYGPT_BF16_PRODUCTS")) {
    for (Bf16Products p : {Bf16Products::dot_pairs, Bf16Products::f32_fma}) {
      if (std::strcmp(value, bf16_products_name(p)) == 0) return p;
    }
    throw ValueError(fmt::format("TINYGPT_BF16_PRODUCTS: '{}' is not one of dot_pairs, f32_fma",
                                 value));
  }
  // With AMX visible oneDNN's bf16 kernels use its tiles, far above the f32 rate.
  const bool slow_pairs =
      intel_cpu() && dnnl_get_effective_cpu_isa() != dnnl_cpu_isa_avx512_core_amx;
  return slow_pairs ? Bf16Products::f32_fma : Bf16Products::dot_pairs;
}

// Unset until first asked (the environment is read then).
std::atomic<int> g_bf16_products{-1};
}  // namespace

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
  if (isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx) {
    try {
      bf16_products();
      return {};
    } catch (const ValueError& e) {
      return e.what();
    }
  }
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

const char* bf16_products_name(Bf16Products products) {
  return products == Bf16Products::f32_fma ? "f32_fma" : "dot_pairs";
}

const char* bf16_products_description(Bf16Products products) {
  return products == Bf16Products::f32_fma
             ? "the f32 FMAs, operands widened: this CPU's bf16 dot products are the slower"
             : "the CPU's bf16 dot products";
}

Bf16Products bf16_products() {
  int value = g_bf16_products.load(std::memory_order_relaxed);
  if (value < 0) {
    value = static_cast<int>(default_bf16_products());
    g_bf16_products.store(value, std::memory_order_relaxed);
  }
  return static_cast<Bf16Products>(value);
}

void set_bf16_products(Bf16Products products) {
  g_bf16_products.store(static_cast<int>(products), std::memory_order_relaxed);
}

Bf16ProductsGuard::Bf16ProductsGuard(Bf16Products products) : saved_(bf16_products()) {
  set_bf16_products(products);
}

Bf16ProductsGuard::~Bf16ProductsGuard() { set_bf16_products(saved_); }

PrecisionGuard::PrecisionGuard(Precision precision) : saved_(matmul_precision()) {
  set_matmul_precision(precision);
}

PrecisionGuard::~PrecisionGuard() { g_precision.store(saved_, std::memory_order_relaxed); }

}  // namespace tinygpt
