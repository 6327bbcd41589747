#include "tinygpt/heads/formation.hpp"

#include <algorithm>
#include <cmath>

namespace tinygpt::heads {

nlohmann::json formation_record(nn::CausalLM& model, const HeadProbes& probes) {
  const HeadReport report = analyze_heads(model, probes);
  return {{"heads", report.heads_json()}, {"in_context", report.in_context_json()}};
}

namespace {

// A head's score for a role name as assign_role spells it ("previous-token" -> "previous_token").
double role_score(const nlohmann::json& head, std::string role) {
  for (char& c : role) {
    if (c == '-') c = '_';
  }
  return number_or(head, role, 0.0);
}

bool positional(const std::string& role) {
  return role == "local" || role == "diffuse" || role == "broad" || role == "mixed";
}

}  // namespace

FormationSeries formation_series(const std::vector<nlohmann::json>& records) {
  FormationSeries out;
  std::vector<const nlohmann::json*> with_heads;
  for (const auto& r : records) {
    if (r.contains("heads") && r["heads"].is_array()) with_heads.push_back(&r);
  }
  for (const nlohmann::json* r : with_heads) {
    const double step = number_or(*r, "step", 0.0);
    double induction = 0.0, copy = 0.0;
    for (const auto& h : (*r)["heads"]) {
      const auto layer = h.value("layer", int64_t{0});
      if (layer < 0) continue;
      if (static_cast<size_t>(layer) >= out.previous_token.size()) {
        out.previous_token.resize(static_cast<size_t>(layer) + 1);
      }
      auto& series = out.previous_token[static_cast<size_t>(layer)];
      if (series.empty() || series.back().step != step) series.push_back({step, 0.0});
      series.back().value = std::max(series.back().value, number_or(h, "previous_token", 0.0));
      induction = std::max(induction, number_or(h, "induction", 0.0));
      copy = std::max(copy, number_or(h, "copy", 0.0));
    }
    out.induction.push_back({step, induction});
    out.copy.push_back({step, copy});
    if (r->contains("second_copy_accuracy")) {
      out.second_copy_accuracy.push_back({step, number_or(*r, "second_copy_accuracy", NAN)});
    }
    if (r->contains("in_context")) {
      out.in_context_ratio.push_back({step, number_or((*r)["in_context"], "ratio", NAN)});
    }
  }
  if (with_heads.empty()) return out;
  for (const auto& last : (*with_heads.back())["heads"]) {
    const std::string role = last.value("role", "");
    if (positional(role)) continue;
    FormationSeries::Formed f{last.value("layer", int64_t{0}), last.value("head", int64_t{0}),
                              role, NAN, role_score(last, role)};
    for (const nlohmann::json* r : with_heads) {
      for (const auto& h : (*r)["heads"]) {
        if (h.value("layer", int64_t{-1}) == f.layer && h.value("head", int64_t{-1}) == f.head &&
            role_score(h, role) >= kRoleThreshold && std::isnan(f.step)) {
          f.step = number_or(*r, "step", 0.0);
        }
      }
    }
    out.formed.push_back(f);
  }
  return out;
}

double number_or(const nlohmann::json& record, const std::string& key, double absent) {
  const auto it = record.find(key);
  return it != record.end() && it->is_number() ? it->get<double>() : absent;
}

double first_step_reaching(const std::vector<StepValue>& series, double threshold, bool rising) {
  for (const StepValue& p : series) {
    if (rising ? p.value >= threshold : p.value <= threshold) return p.step;
  }
  return NAN;
}

std::string formation_summary(const FormationSeries& series) {
  std::string out;
  for (const auto& f : series.formed) {
    out += fmt::format("layer {} head {} {}: score >= {} from step {:.0f} (final {:.2f})\n", f.layer,
                       f.head, f.role, kRoleThreshold, f.step, f.final_score);
  }
  const double copying = first_step_reaching(series.in_context_ratio, 0.5, false);
  if (!std::isnan(copying)) {
    out += fmt::format("in-context: second-copy loss below half the first's from step {:.0f}\n",
                       copying);
  }
  return out;
}

}  // namespace tinygpt::heads
