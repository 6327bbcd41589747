#pragma once
// What analysis adds to a run's training loop (train::fit): each evaluation's record of the
// heads' formation, and the end-of-run pictures of a replaced or resumed run cleared once this
// run has saved.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tinygpt/heads/encoder_heads.hpp"
#include "tinygpt/heads/probe_set.hpp"
#include "tinygpt/train/fit.hpp"

namespace tinygpt::analysis {

// Pairs an evaluation during training scores (the held-out split's first ones): enough to follow
// accuracy and alignment forming, a fraction of a second for the default model.
inline constexpr int64_t kFormationPairs = 200;

// {"exact_match", "char_accuracy", "cross_attention": [{"layer", "head", "alignment"}]} of the
// model on the first `max_pairs` pairs of `split` (alignment only for a built-in task).
nlohmann::json pair_record(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::Tokenizer& tokenizer, const std::string& task,
                           data::Split split, int64_t max_pairs);

// Every evaluation also scores the heads on the run's own probes (a language model's head
// roles, when its probes can run; an encoder's head roles and second-copy masked accuracy; an
// encoder-decoder's held-out accuracy and cross-attention alignment on the first pairs), and the
// report at the end uses the same probes.
class FormationObserver : public train::FitObserver {
 public:
  explicit FormationObserver(train::Run& run);
  nlohmann::json eval_fields(train::Run& run) override;
  // The probes of a language model's run (null when its heads are not scored), and why not.
  const heads::ProbeSet* probes() const { return probes_ ? &*probes_ : nullptr; }
  const std::string& no_heads() const { return no_heads_; }

 private:
  std::optional<heads::ProbeSet> probes_;
  std::optional<heads::EncoderProbes> encoder_probes_;
  std::string no_heads_;
};

// The page and heatmaps describe a run's end: once this run has saved, those of the run it
// replaced or resumed describe another checkpoint, and go (the end of this run draws its own).
// Only the rank that writes the run's folder clears it.
class StaleReportObserver : public train::FitObserver {
 public:
  explicit StaleReportObserver(bool writes_folder) : cleared_(!writes_folder) {}
  void on_save(train::Run& run) override;

 private:
  bool cleared_;
};

}  // namespace tinygpt::analysis
