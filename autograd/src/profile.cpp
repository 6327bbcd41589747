#include "tinygpt/autograd/profile.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

namespace tinygpt {
namespace detail {
bool g_op_profiling = false;
}
namespace {

using Clock = std::chrono::steady_clock;

struct Profile {
  std::map<std::string, OpProfileEntry> entries;
  std::vector<ProductProfileEntry> products;
  // What ran since the last op was charged, for the op charged next.
  std::vector<ProductProfileEntry> pending;
  double pending_flops = 0.0;
  Clock::time_point last = Clock::now();
};

Profile& profile() {
  static Profile p;
  return p;
}

OpProfileEntry& entry(const char* name) {
  auto& e = profile().entries[name];
  if (e.name.empty()) e.name = name;
  return e;
}

bool same_product(const ProductProfileEntry& a, const ProductProfileEntry& b) {
  return std::tie(a.op, a.backward, a.ta, a.tb, a.batch, a.m, a.n, a.k, a.bias, a.a_rounded,
                  a.b_rounded) == std::tie(b.op, b.backward, b.ta, b.tb, b.batch, b.m, b.n, b.k,
                                           b.bias, b.a_rounded, b.b_rounded);
}

// The products and FLOPs since the last charge go to `e`'s op, in the given direction.
void charge_pending(OpProfileEntry& e, bool backward) {
  Profile& p = profile();
  (backward ? e.backward_flops : e.forward_flops) += p.pending_flops;
  p.pending_flops = 0.0;
  for (ProductProfileEntry& product : p.pending) {
    (backward ? e.backward_product_seconds : e.forward_product_seconds) += product.seconds;
    product.op = e.name;
    product.backward = backward;
    auto it = std::find_if(p.products.begin(), p.products.end(),
                           [&](const auto& known) { return same_product(known, product); });
    if (it == p.products.end()) {
      p.products.push_back(product);
    } else {
      it->seconds += product.seconds;
      it->calls += product.calls;
    }
  }
  p.pending.clear();
}

}  // namespace

void set_op_profiling(bool on) {
  detail::g_op_profiling = on;
  profile().last = Clock::now();
}

void profile_mark(const char* name) {
  if (!detail::g_op_profiling) return;
  const auto now = Clock::now();
  if (name != nullptr) {
    auto& e = entry(name);
    e.forward_seconds += std::chrono::duration<double>(now - profile().last).count();
    ++e.forward_calls;
    charge_pending(e, false);
  }
  profile().last = now;
}

void detail::profile_backward(const char* name, double seconds) {
  auto& e = entry(name);
  e.backward_seconds += seconds;
  ++e.backward_calls;
  charge_pending(e, true);
}

void detail::profile_product(const ProductProfileEntry& product) {
  profile().pending.push_back(product);
  profile().pending_flops += product.flops();
}

void detail::profile_flops(double flops) { profile().pending_flops += flops; }

std::vector<OpProfileEntry> op_profile() {
  std::vector<OpProfileEntry> out;
  for (const auto& [name, e] : profile().entries) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.forward_seconds + a.backward_seconds > b.forward_seconds + b.backward_seconds;
  });
  return out;
}

std::vector<ProductProfileEntry> product_profile() {
  std::vector<ProductProfileEntry> out = profile().products;
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return out;
}

void reset_op_profile() {
  profile().entries.clear();
  profile().products.clear();
  profile().pending.clear();
  profile().pending_flops = 0.0;
  profile().last = Clock::now();
}

}  // namespace tinygpt
