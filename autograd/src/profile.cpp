#include "tinygpt/autograd/profile.hpp"

#include <algorithm>
#include <chrono>
#include <map>

namespace tinygpt {
namespace detail {
bool g_op_profiling = false;
}
namespace {

using Clock = std::chrono::steady_clock;

struct Profile {
  std::map<std::string, OpProfileEntry> entries;
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
  }
  profile().last = now;
}

void detail::profile_backward(const char* name, double seconds) {
  auto& e = entry(name);
  e.backward_seconds += seconds;
  ++e.backward_calls;
}

std::vector<OpProfileEntry> op_profile() {
  std::vector<OpProfileEntry> out;
  for (const auto& [name, e] : profile().entries) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.forward_seconds + a.backward_seconds > b.forward_seconds + b.backward_seconds;
  });
  return out;
}

void reset_op_profile() {
  profile().entries.clear();
  profile().last = Clock::now();
}

}  // namespace tinygpt
