#pragma once
// Removing heads to see what breaks (attention is not explanation: a head is shown to copy when
// removing it stops the copying). A head is removed at its hook point blocks.{L}.attn.z, before
// c_proj mixes the heads: its output is replaced by zeros ("zero") or by its mean over the text
// probes' positions ("mean", which keeps the constant part a head adds to the residual stream).
// Measured: the in-context ratio (second / first copy loss on the repeated random sequences of
// analyze_heads) and the mean next-token loss on the text probes.
#include <string>
#include <vector>

#include "tinygpt/heads/head_analysis.hpp"

namespace tinygpt::heads {

enum class AblationMode { zero, mean };
// "zero" or "mean"; ValueError otherwise.
AblationMode parse_ablation_mode(const std::string& name);
const char* ablation_mode_name(AblationMode mode);

struct HeadRef {
  int64_t layer = 0, head = 0;
  friend bool operator==(HeadRef a, HeadRef b) { return a.layer == b.layer && a.head == b.head; }
};
// "L.H,L.H,..." -> heads; ValueError naming the item when one is malformed, outside the model
// (n_layer, n_head) or repeated.
std::vector<HeadRef> parse_head_list(const std::string& list, int64_t n_layer, int64_t n_head);
std::string head_list_str(const std::vector<HeadRef>& heads);  // "0.1,1.7"
// Every head the model has, layer by layer, in its original numbering (a pruned head is not).
std::vector<HeadRef> model_heads(const nn::GPTConfig& config);
// Where the heads of `heads` in `layer` sit among the heads the layer has (its attention's head
// axis: a layer with pruned heads holds its heads left in order); a head it no longer has is
// skipped, as there is nothing left of it.
std::vector<int64_t> head_slots(const nn::GPTConfig& config, int64_t layer, const std::vector<HeadRef>& heads);
// (1,H',1,1) of `dtype` to multiply blocks.{layer}.attn.z by (H' the heads the layer has): 0 for
// the heads of `heads` in `layer`, 1 for the others; undefined when none of them is there.
Tensor head_keep_mask(const nn::GPTConfig& config, int64_t layer, const std::vector<HeadRef>& heads, DType dtype);

struct AblationResult {
  std::vector<HeadRef> removed;  // empty for the intact model
  double first_copy_loss = 0.0;
  double second_copy_loss = 0.0;
  double second_copy_ratio = 0.0;  // second / first
  double text_loss = 0.0;          // mean next-token loss on the text probes
};

// Measures the model with heads removed. Built once per model and probes (it runs the intact
// model for the baseline, and for "mean" records every head's mean output); the model is used
// in eval mode without gradients and left with no hook.
class HeadAblation {
 public:
  HeadAblation(nn::GPT& model, const HeadProbes& probes, AblationMode mode);

  const AblationResult& baseline() const { return baseline_; }
  AblationMode mode() const { return mode_; }
  // The measures with all of `heads` removed together.
  AblationResult run(const std::vector<HeadRef>& heads);
  // run({h}) for every head, layer by layer.
  std::vector<AblationResult> each_head();

 private:
  nn::GPT& model_;
  HeadProbes probes_;
  AblationMode mode_;
  int64_t period_;
  std::vector<std::vector<int64_t>> repeated_;
  std::vector<Tensor> means_;  // per layer (1,H,1,d): each head's mean z (mean mode)
  AblationResult baseline_;
};

// Every head removed in turn, beside the intact model.
struct EachHeadAblation {
  AblationMode mode = AblationMode::zero;
  AblationResult baseline;
  std::vector<AblationResult> heads;  // each head the model has removed alone, layer by layer

  // The result of removing the head `s` alone, null for a head the model does not have (pruned).
  const AblationResult* without(const HeadScores& s) const;
  // report.heads_json() with each head object's "ablated_second_copy_ratio" and
  // "ablated_loss_delta" (its ablated text loss minus the baseline's); a pruned head has neither.
  nlohmann::json heads_json(const HeadReport& report) const;
  // One row per head the model has: role, second/first copy ratio and text loss with it removed.
  std::string table(const HeadReport& report) const;
};
EachHeadAblation ablate_each_head(HeadAblation& ablation);

}  // namespace tinygpt::heads
