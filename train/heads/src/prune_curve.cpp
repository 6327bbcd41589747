#include "tinygpt/heads/prune_curve.hpp"

#include <algorithm>
#include <numeric>

#include "probe_runs.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::heads {
namespace {

// Heads in ascending order of `cost` (ties by position).
std::vector<HeadRef> ascending(const std::vector<HeadRef>& heads, const std::vector<double>& cost) {
  std::vector<size_t> index(heads.size());
  std::iota(index.begin(), index.end(), size_t{0});
  std::stable_sort(index.begin(), index.end(), [&](size_t a, size_t b) { return cost[a] < cost[b]; });
  std::vector<HeadRef> out;
  for (size_t i : index) out.push_back(heads[i]);
  return out;
}

PruneCurve measure(HeadAblation& ablation, const std::string& name, const std::vector<HeadRef>& order) {
  PruneCurve curve{name, order, {}, {}};
  for (size_t k = 0; k <= order.size(); ++k) {
    const AblationResult r = ablation.run(std::vector<HeadRef>(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k)));
    curve.loss.push_back(r.text_loss);
    curve.second_copy_ratio.push_back(r.second_copy_ratio);
  }
  return curve;
}

}  // namespace

std::vector<PruneCurve> prune_curves(HeadAblation& ablation, const std::vector<HeadImportance>& importance,
                                     const std::vector<AblationResult>& each, uint64_t seed) {
  if (ablation.mode() != AblationMode::zero || importance.size() != each.size()) {
    throw ValueError(Operation("prune_curves"), fmt::format("needs zero ablation and one importance per ablated "
                                 "head, got {} ablation, {} importances for {} heads",
                                 ablation_mode_name(ablation.mode()), importance.size(), each.size()));
  }
  std::vector<HeadRef> heads;
  std::vector<double> by_importance, by_ablation;
  for (size_t i = 0; i < importance.size(); ++i) {
    heads.push_back(importance[i].head);
    by_importance.push_back(importance[i].normalised);
    by_ablation.push_back(each[i].text_loss);
  }
  std::vector<HeadRef> shuffled = heads;
  Generator gen(seed);
  gen.shuffle_front(shuffled, static_cast<int64_t>(shuffled.size()));
  return {measure(ablation, "importance", ascending(heads, by_importance)),
          measure(ablation, "ablation", ascending(heads, by_ablation)),
          measure(ablation, "random", shuffled)};
}

std::vector<OutputChange> output_change_per_head(nn::GPT& model, const std::vector<std::vector<int64_t>>& windows) {
  NoGradGuard no_grad;
  model.eval();
  const nn::GPTConfig& config = model.config();
  const DType dtype = model.parameters().front().dtype();
  const Tensor tokens = batch_of(windows);
  const Tensor intact = model.forward(tokens);
  std::vector<OutputChange> out;
  for (const HeadRef& h : model_heads(config)) {
    const Tensor mask = head_keep_mask(config, h.layer, {h}, dtype);
    nn::ScopedHooks hooks(model);
    hooks.add(nn::hook_name(h.layer, nn::HookPoint::attn_z), [mask](const Tensor& z) { return z * mask; });
    const Tensor diff = model.forward(tokens) - intact;  // (B,T,V)
    out.push_back({h, mean(sqrt(sum(diff * diff, {2}))).item()});
  }
  return out;
}

nlohmann::json output_change_json(const std::vector<OutputChange>& changes) {
  nlohmann::json list = nlohmann::json::array();
  for (const OutputChange& c : changes) list.push_back({{"layer", c.head.layer}, {"head", c.head.head}, {"l2", c.l2}});
  return list;
}

nlohmann::json prune_curves_json(const std::vector<PruneCurve>& curves) {
  nlohmann::json out = nlohmann::json::object();
  for (const PruneCurve& c : curves) {
    nlohmann::json removed = nlohmann::json::array();
    for (const HeadRef& h : c.removed) removed.push_back({h.layer, h.head});
    out[c.order] = {{"removed", removed}, {"loss", c.loss}, {"second_copy_ratio", c.second_copy_ratio}};
  }
  return out;
}

}  // namespace tinygpt::heads
