#include "tinygpt/heads/head_scores.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tinygpt::heads {
namespace {

// Mean over queries i in [first, last) of mass(i); 0 when the range is empty.
template <class Mass>
double mean_over_queries(int64_t first, int64_t last, Mass mass) {
  if (last <= first) return 0.0;
  double total = 0.0;
  for (int64_t i = first; i < last; ++i) total += mass(i);
  return total / static_cast<double>(last - first);
}

}  // namespace

double previous_token_score(const float* a, int64_t t) {
  return mean_over_queries(1, t, [&](int64_t i) { return a[i * t + i - 1]; });
}

double current_token_score(const float* a, int64_t t) {
  return mean_over_queries(1, t, [&](int64_t i) { return a[i * t + i]; });
}

double first_token_score(const float* a, int64_t t) {
  return mean_over_queries(1, t, [&](int64_t i) { return a[i * t]; });
}

double local_score(const float* a, int64_t t, int64_t window) {
  return mean_over_queries(std::max<int64_t>(window, 1), t, [&](int64_t i) {
    double mass = 0.0;
    for (int64_t j = i - window; j <= i; ++j) mass += a[i * t + j];
    return mass;
  });
}

double normalized_entropy(const float* a, int64_t t) {
  return mean_over_queries(1, t, [&](int64_t i) {
    double h = 0.0;
    for (int64_t j = 0; j <= i; ++j) {
      const double p = a[i * t + j];
      if (p > 0.0) h -= p * std::log(p);
    }
    return h / std::log(static_cast<double>(i + 1));
  });
}

double induction_score(const float* a, int64_t t, int64_t period) {
  return mean_over_queries(period, std::min(t, 2 * period),
                           [&](int64_t i) { return a[i * t + i - period + 1]; });
}

double duplicate_token_score(const float* a, int64_t t, int64_t period) {
  return mean_over_queries(period, std::min(t, 2 * period),
                           [&](int64_t i) { return a[i * t + i - period]; });
}

Role pick_role(std::initializer_list<std::pair<const char*, double>> candidates, double local,
               double entropy, const char* spread) {
  const auto best = std::max_element(candidates.begin(), candidates.end(),
                                     [](const auto& x, const auto& y) { return x.second < y.second; });
  if (best != candidates.end() && best->second >= kRoleThreshold) return {best->first, best->second};
  if (local >= kLocalThreshold) return {"local", local};
  return {entropy >= kDiffuseEntropy ? spread : "mixed", entropy};
}

void assign_role(HeadScores& s) {
  const Role role = pick_role({{"previous-token", s.previous_token},
                               {"induction", s.induction},
                               {"duplicate-token", s.duplicate_token},
                               {"first-token", s.first_token},
                               {"current-token", s.current_token}},
                              s.local, s.entropy);
  s.role = role.name;
  s.role_score = role.score;
}

}  // namespace tinygpt::heads
