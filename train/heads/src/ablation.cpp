#include "tinygpt/heads/ablation.hpp"

#include <algorithm>
#include <sstream>

#include "probe_runs.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::heads {

AblationMode parse_ablation_mode(const std::string& name) {
  if (name == "zero") return AblationMode::zero;
  if (name == "mean") return AblationMode::mean;
  throw ValueError(Operation("ablation"), fmt::format("mode must be zero or mean, got '{}'", name));
}

const char* ablation_mode_name(AblationMode mode) {
  return mode == AblationMode::zero ? "zero" : "mean";
}

std::vector<HeadRef> parse_head_list(const std::string& list, int64_t n_layer, int64_t n_head) {
  std::vector<HeadRef> heads;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    HeadRef h;
    char dot = 0;
    std::istringstream in(item);
    if (!(in >> h.layer >> dot >> h.head) || dot != '.' || !(in >> std::ws).eof()) {
      throw ValueError(fmt::format("'{}' in the head list is not LAYER.HEAD (e.g. 1.7)", item));
    }
    if (h.layer < 0 || h.layer >= n_layer || h.head < 0 || h.head >= n_head) {
      throw ValueError(fmt::format("head {} in the head list is outside the model ({} layers of "
                                   "{} heads)", item, n_layer, n_head));
    }
    for (const HeadRef& seen : heads) {
      if (seen == h) throw ValueError(fmt::format("head {} is in the head list twice", item));
    }
    heads.push_back(h);
  }
  if (heads.empty()) throw ValueError(fmt::format("the head list '{}' names no head", list));
  return heads;
}

std::string head_list_str(const std::vector<HeadRef>& heads) {
  std::string out;
  for (const HeadRef& h : heads) out += fmt::format("{}{}.{}", out.empty() ? "" : ",", h.layer, h.head);
  return out;
}

std::vector<HeadRef> model_heads(const nn::GPTConfig& config) {
  std::vector<HeadRef> out;
  for (int64_t layer = 0; layer < config.n_layer; ++layer) {
    for (int64_t head : config.kept_heads(layer)) out.push_back({layer, head});
  }
  return out;
}

std::vector<int64_t> head_slots(const nn::GPTConfig& config, int64_t layer, const std::vector<HeadRef>& heads) {
  const std::vector<int64_t> kept = config.kept_heads(layer);
  std::vector<int64_t> slots;
  for (const HeadRef& h : heads) {
    const auto at = std::find(kept.begin(), kept.end(), h.head);
    if (h.layer == layer && at != kept.end()) slots.push_back(at - kept.begin());
  }
  return slots;
}

Tensor head_keep_mask(const nn::GPTConfig& config, int64_t layer, const std::vector<HeadRef>& heads, DType dtype) {
  const std::vector<int64_t> slots = head_slots(config, layer, heads);
  if (slots.empty()) return Tensor();
  const int64_t n = config.layer_heads(layer);
  std::vector<double> keep(static_cast<size_t>(n), 1.0);
  for (int64_t slot : slots) keep[static_cast<size_t>(slot)] = 0.0;
  return Tensor::from(keep, {1, n, 1, 1}, dtype);
}

HeadAblation::HeadAblation(nn::GPT& model, const HeadProbes& probes, AblationMode mode)
    : model_(model), probes_(probes), mode_(mode) {
  if (probes.texts.empty() || probes.alphabet.empty()) {
    throw ValueError(Operation("HeadAblation"), "needs at least one text probe and a non-empty alphabet");
  }
  period_ = probe_period(model.config().block_size, probes);
  repeated_ = repeated_sequences(probes, period_);
  if (mode == AblationMode::mean) {
    NoGradGuard no_grad;
    model_.eval();
    const auto cache = model_.run_with_cache(batch_of(probes.texts), [](const std::string& name) {
      return name.size() > 7 && name.compare(name.size() - 7, 7, ".attn.z") == 0;
    });
    for (int64_t layer = 0; layer < model.config().n_layer; ++layer) {
      means_.push_back(mean(cache[nn::hook_name(layer, nn::HookPoint::attn_z)], {0, 2}, true));
    }
  }
  baseline_ = run({});
}

AblationResult HeadAblation::run(const std::vector<HeadRef>& heads) {
  const auto& config = model_.config();
  const DType dtype = model_.parameters().front().dtype();
  NoGradGuard no_grad;
  model_.eval();
  nn::ScopedHooks hooks(model_);
  for (int64_t layer = 0; layer < config.n_layer; ++layer) {
    const Tensor mask = head_keep_mask(config, layer, heads, dtype);  // 0 = removed
    if (!mask.defined()) continue;
    Tensor fill;  // what a removed head outputs instead: (1,H,1,d), 0 for the heads kept
    if (mode_ == AblationMode::mean) fill = means_[static_cast<size_t>(layer)] * (1.0 - mask);
    hooks.add(nn::hook_name(layer, nn::HookPoint::attn_z), [mask, fill](const Tensor& z) {
      return fill.defined() ? z * mask + fill : z * mask;
    });
  }
  AblationResult r;
  r.removed = heads;
  const CopyLosses copies = copy_losses(model_.forward(batch_of(repeated_)), repeated_, period_);
  r.first_copy_loss = copies.first;
  r.second_copy_loss = copies.second;
  r.second_copy_ratio = copies.first > 0 ? copies.second / copies.first : 0.0;
  const int64_t t = static_cast<int64_t>(probes_.texts[0].size());
  r.text_loss = mean_next_token_loss(model_.forward(batch_of(probes_.texts)), probes_.texts, 0, t - 1);
  return r;
}

std::vector<AblationResult> HeadAblation::each_head() {
  std::vector<AblationResult> out;
  for (const HeadRef& h : model_heads(model_.config())) out.push_back(run({h}));
  return out;
}

EachHeadAblation ablate_each_head(HeadAblation& ablation) {
  return {ablation.mode(), ablation.baseline(), ablation.each_head()};
}

const AblationResult* EachHeadAblation::without(const HeadScores& s) const {
  for (const AblationResult& r : heads) {
    if (r.removed.size() == 1 && r.removed[0] == HeadRef{s.layer, s.head}) return &r;
  }
  return nullptr;
}

nlohmann::json EachHeadAblation::heads_json(const HeadReport& report) const {
  nlohmann::json list = report.heads_json();
  for (size_t i = 0; i < report.heads.size(); ++i) {
    const AblationResult* r = without(report.heads[i]);
    if (r == nullptr) continue;  // a pruned head: nothing to remove
    list[i]["ablated_second_copy_ratio"] = r->second_copy_ratio;
    list[i]["ablated_loss_delta"] = r->text_loss - baseline.text_loss;
  }
  return list;
}

std::string EachHeadAblation::table(const HeadReport& report) const {
  std::string out = fmt::format(
      "ablation ({}): each head removed in turn; intact model: second/first copy loss {:.0f}%, "
      "text loss {:.3f}\n{:>5} {:>4}  {:<15} {:>13} {:>11}\n",
      ablation_mode_name(mode), 100.0 * baseline.second_copy_ratio, baseline.text_loss, "layer",
      "head", "role", "second/first", "text loss");
  for (const HeadScores& s : report.heads) {
    const AblationResult* r = without(s);
    if (r == nullptr) continue;
    out += fmt::format("{:>5} {:>4}  {:<15} {:>12.0f}% {:>+11.3f}\n", s.layer, s.head, s.role,
                       100.0 * r->second_copy_ratio, r->text_loss - baseline.text_loss);
  }
  return out;
}

}  // namespace tinygpt::heads
