#include "tinygpt/autograd/precision.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

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

bool onednn_uses_amx() { return dnnl_get_effective_cpu_isa() == dnnl_cpu_isa_avx512_core_amx; }

// oneDNN runs bf16 products natively here: with the avx512_bf16 instructions, or AMX.
bool onednn_runs_bf16() {
  return onednn_uses_amx() || dnnl_get_effective_cpu_isa() == dnnl_cpu_isa_avx512_core_bf16;
}

Bf16Products default_bf16_products() {
  const bool amx = onednn_uses_amx();
  if (const char* value = std::getenv("TINYGPT_BF16_PRODUCTS")) {
    for (Bf16Products p : {Bf16Products::dot_pairs, Bf16Products::f32_fma, Bf16Products::amx}) {
      if (std::strcmp(value, bf16_products_name(p)) != 0) continue;
      if (p == Bf16Products::amx && !amx) {
        throw ValueError("TINYGPT_BF16_PRODUCTS: amx needs the AMX tiles, which oneDNN does not "
                         "use on this CPU");
      }
      return p;
    }
    throw ValueError(fmt::format(
        "TINYGPT_BF16_PRODUCTS: '{}' is not one of dot_pairs, f32_fma, amx", value));
  }
  if (!intel_cpu()) return Bf16Products::dot_pairs;
  // AMX tiles run far above the f32 rate; Intel's vdpbf16ps below it.
  return amx ? Bf16Products::amx : Bf16Products::f32_fma;
}

// Unset until first asked (the environment is read then).
std::atomic<int> g_bf16_products{-1};
}  // namespace

bool amx_tiles_usable() {
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    if ((d & (1u << 24)) == 0 || (d & (1u << 22)) == 0) return false;
    constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
    constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return usable;
}

namespace {
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
}  // namespace

// Both in asm, which needs no target attribute: ldtilecfg told that it reads the configuration
// (GCC 12's _tile_loadconfig is not, and drops the stores that fill it), and GCC does not inline
// _tile_release into a destructor built for the default target.
AmxTiles::AmxTiles() {
  if (!amx_tiles_usable()) {
    throw Error("AmxTiles: this CPU has no AMX tiles with bf16, or Linux did not grant them to "
                "this process (see amx_tiles_usable())");
  }
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  asm volatile("ldtilecfg %0" : : "m"(config));
}

AmxTiles::~AmxTiles() { asm volatile("tilerelease" ::: "memory"); }

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
  if (onednn_runs_bf16()) {
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
  switch (products) {
    case Bf16Products::f32_fma: return "f32_fma";
    case Bf16Products::amx: return "amx";
    default: return "dot_pairs";
  }
}

const char* bf16_products_description(Bf16Products products) {
  switch (products) {
    case Bf16Products::f32_fma:
      return "the f32 FMAs, operands widened: this CPU's bf16 dot products are the slower";
    case Bf16Products::amx:
      return "the AMX tiles";
    default: return "the CPU's bf16 dot products";
  }
}

Bf16Products bf16_products() {
  int value = g_bf16_products.load(std::memory_order_relaxed);
  if (value < 0) {
    value = static_cast<int>(default_bf16_products());
    g_bf16_products.store(value, std::memory_order_relaxed);
  }
  return static_cast<Bf16Products>(value);
}

std::vector<Bf16Products> available_bf16_products() {
  if (!onednn_runs_bf16()) return {};
  std::vector<Bf16Products> units = {Bf16Products::dot_pairs, Bf16Products::f32_fma};
  if (onednn_uses_amx()) units.push_back(Bf16Products::amx);
  return units;
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
