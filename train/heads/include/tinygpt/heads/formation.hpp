#pragma once
// Heads forming during training: what each evaluation adds to the training log (log.jsonl), and
// the series drawn from those records against the step (heads_over_time.png).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/heads/head_analysis.hpp"

namespace tinygpt::heads {

// The fields an eval record gains: {"heads": [{"layer", "head", "role", "previous_token",
// "induction", ... every score}], "in_context": {"first_copy_loss", "second_copy_loss",
// "ratio"}}, for the model as it is now (analyze_heads on `probes`; leaves the model in eval
// mode with no gradient recorded).
nlohmann::json formation_record(nn::CausalLM& model, const HeadProbes& probes);

struct StepValue {
  double step = 0.0;
  double value = 0.0;
};

// Read back from the records that have "heads" (others are skipped), in their order.
struct FormationSeries {
  std::vector<std::vector<StepValue>> previous_token;  // [layer]: its best head's score
  std::vector<StepValue> induction;                    // best head of any layer
  std::vector<StepValue> in_context_ratio;             // second / first copy loss
  // An encoder's records: the best head's copy score, and the masked second-copy accuracy.
  std::vector<StepValue> copy;
  std::vector<StepValue> second_copy_accuracy;
  // For each head that ends with a role other than local, diffuse, broad or mixed: that role and the
  // first step at which the head's score for it reached kRoleThreshold.
  struct Formed {
    int64_t layer = 0, head = 0;
    std::string role;
    double step = 0.0;
    double final_score = 0.0;
  };
  std::vector<Formed> formed;
};
FormationSeries formation_series(const std::vector<nlohmann::json>& records);

// The number `key` of a logged record, `absent` when it is missing or null (a score that was NaN
// is logged as null): what every reader of the log's scores takes, never a JSON type error.
double number_or(const nlohmann::json& record, const std::string& key, double absent);

// The first step at which `series` reaches `threshold` (at or above when `rising`, at or below
// otherwise), NaN when it never does.
double first_step_reaching(const std::vector<StepValue>& series, double threshold, bool rising = true);

// "layer 0 head 1 previous-token: formed at step 2500 (final 0.96)" lines and when the in-context
// ratio first fell below 0.5, for the end of a training run.
std::string formation_summary(const FormationSeries& series);

}  // namespace tinygpt::heads
