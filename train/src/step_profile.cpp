#include "step_profile.hpp"

#include <cmath>

#include <fmt/format.h>

#include "tinygpt/autograd/memory.hpp"

namespace tinygpt::train {
namespace {

using nlohmann::json;

// Runs per product alone, the best kept: enough for a quiet reading of each shape without
// making a profile of a large model slow.
constexpr int kAloneRuns = 5;

double gflops_of(double flops, double seconds) {
  return flops > 0.0 && seconds > 0.0 ? flops / seconds / 1e9 : NAN;
}

json number_or_null(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

// "A B", "A^T B", "A B^T": which operand the product reads transposed.
std::string product_form(const ProductProfileEntry& e) {
  return fmt::format("A{} B{}", e.ta ? "^T" : "", e.tb ? "^T" : "");
}

std::string product_shape(const ProductProfileEntry& e) {
  const std::string mnk = fmt::format("{} x {} x {}", e.m, e.n, e.k);
  return e.batch > 1 ? fmt::format("{} x ({})", e.batch, mnk) : mnk;
}

// A product's GFLOP/s in the step, alone, and alone on operands flushed to memory.
struct ProductRates {
  double step, alone, cold;
};
ProductRates product_rates(const StepProfile& profile, size_t i) {
  const ProductProfileEntry& e = profile.products[i];
  const double flops = e.flops() / e.calls;
  return {gflops_of(e.flops(), e.seconds), gflops_of(flops, profile.alone_seconds[i]),
          gflops_of(flops, profile.alone_cold_seconds[i])};
}

std::string op_text(const std::vector<OpProfileEntry>& ops, int64_t steps) {
  std::string out = "\n  per-op time, ms per step (forward | backward | total), largest first; "
                    "for ops with products,\n  the ms outside the products timed (forward | "
                    "backward) and GFLOP/s of the products counted (forward | backward):\n";
  double total = 0.0;
  for (const auto& e : ops) total += e.forward_seconds + e.backward_seconds;
  for (const auto& e : ops) {
    const double fw = 1000.0 * e.forward_seconds / steps;
    const double bw = 1000.0 * e.backward_seconds / steps;
    out += fmt::format("  {:<28} {:9.3f} {:9.3f} {:9.3f}  {:5.1f}%", e.name, fw, bw, fw + bw,
                       100.0 * (e.forward_seconds + e.backward_seconds) / total);
    if (e.forward_flops > 0.0 || e.backward_flops > 0.0) {
      const bool timed = e.forward_product_seconds + e.backward_product_seconds > 0.0;
      out += timed ? fmt::format("  {:8.3f} {:8.3f}",
                                 1000.0 * (e.forward_seconds - e.forward_product_seconds) / steps,
                                 1000.0 * (e.backward_seconds - e.backward_product_seconds) / steps)
                   : fmt::format("  {:>8} {:>8}", "fused", "fused");
      out += fmt::format("  {:7.1f} {:7.1f}", gflops_of(e.forward_flops, e.forward_seconds),
                         gflops_of(e.backward_flops, e.backward_seconds));
    }
    out += "\n";
  }
  return out;
}

}  // namespace

StepProfile read_step_profile() { return {op_profile(), product_profile(), {}, {}}; }

void time_products_alone(StepProfile& profile, Precision precision) {
  const PrecisionGuard guard(precision);
  profile.alone_seconds.clear();
  profile.alone_cold_seconds.clear();
  for (const auto& e : profile.products) {
    profile.alone_seconds.push_back(time_product_alone(e, kAloneRuns));
    profile.alone_cold_seconds.push_back(time_product_alone(e, kAloneRuns, true));
    empty_cache();  // each shape's operands are freed before the next one's
  }
}

json step_profile_json(const StepProfile& profile, int64_t steps, double peak_gflops) {
  json ops = json::array();
  for (const auto& e : profile.ops) {
    ops.push_back({{"op", e.name},
                   {"forward_ms_per_step", 1000.0 * e.forward_seconds / steps},
                   {"backward_ms_per_step", 1000.0 * e.backward_seconds / steps},
                   {"forward_products_ms_per_step", 1000.0 * e.forward_product_seconds / steps},
                   {"backward_products_ms_per_step", 1000.0 * e.backward_product_seconds / steps},
                   {"forward_gflops", number_or_null(gflops_of(e.forward_flops, e.forward_seconds))},
                   {"backward_gflops",
                    number_or_null(gflops_of(e.backward_flops, e.backward_seconds))}});
  }
  json products = json::array();
  for (size_t i = 0; i < profile.products.size(); ++i) {
    const ProductProfileEntry& e = profile.products[i];
    const auto [step, alone, cold] = product_rates(profile, i);
    products.push_back({{"op", e.op}, {"pass", e.backward ? "backward" : "forward"},
                        {"form", product_form(e)}, {"batch", e.batch}, {"m", e.m}, {"n", e.n},
                        {"k", e.k}, {"calls_per_step", static_cast<double>(e.calls) / steps},
                        {"ms_per_step", 1000.0 * e.seconds / steps},
                        {"gflops", number_or_null(step)}, {"gflops_alone", number_or_null(alone)},
                        {"gflops_alone_cold", number_or_null(cold)},
                        {"peak_fraction", number_or_null(step / peak_gflops)},
                        {"peak_fraction_alone", number_or_null(alone / peak_gflops)},
                        {"peak_fraction_alone_cold", number_or_null(cold / peak_gflops)}});
  }
  return {{"profile", ops}, {"products", products}};
}

std::string step_profile_text(const StepProfile& profile, int64_t steps, double peak_gflops) {
  std::string out = op_text(profile.ops, steps);
  const std::string peak = std::isnan(peak_gflops)
                               ? std::string("no peak measured")
                               : fmt::format("of the {:.1f} GFLOP/s peak of the units they ran on",
                                             peak_gflops);
  out += fmt::format(
      "\n  per-product time, ms per step, and GFLOP/s in the step, alone (best of {}) and alone "
      "cold\n  (operands and output flushed to memory first), largest first; of peak, in the "
      "step | alone | cold:\n  {}:\n"
      "  {:<20} {:<8} {:<7} {:<22} {:>5} {:>8} {:>8} {:>8} {:>8} {:>20}\n",
      kAloneRuns, peak, "op", "pass", "form", "shape (m x n x k)", "calls", "ms", "GFLOP/s",
      "alone", "cold", "of peak");
  for (size_t i = 0; i < profile.products.size(); ++i) {
    const ProductProfileEntry& e = profile.products[i];
    const auto [step, alone, cold] = product_rates(profile, i);
    out += fmt::format(
        "  {:<20} {:<8} {:<7} {:<22} {:5.1f} {:8.3f} {:8.1f} {:8.1f} {:8.1f}  {:.2f} | {:.2f} | "
        "{:.2f}\n",
        e.op, e.backward ? "backward" : "forward", product_form(e), product_shape(e),
        static_cast<double>(e.calls) / steps, 1000.0 * e.seconds / steps, step, alone, cold,
        step / peak_gflops, alone / peak_gflops, cold / peak_gflops);
  }
  return out;
}

}  // namespace tinygpt::train
