#include "tinygpt/heads/patching.hpp"

#include <algorithm>
#include <memory>

#include "probe_runs.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::heads {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const std::string tail(suffix);
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// 1 at `chosen` of `n` slots, shaped `shape` (the slot axis the only one longer than 1).
Tensor one_hot_mask(int64_t n, const std::vector<int64_t>& chosen, const Shape& shape, DType dtype) {
  std::vector<double> mask(static_cast<size_t>(n), 0.0);
  for (int64_t i : chosen) mask[static_cast<size_t>(i)] = 1.0;
  return Tensor::from(mask, shape, dtype);
}

// `value` where mask is 0, `patch` where it is 1.
Tensor patched(const Tensor& value, const Tensor& patch, const Tensor& mask) {
  return value * (1.0 - mask) + patch * mask;
}

// The two runs of the experiment and its metric.
class PatchExperiment {
 public:
  PatchExperiment(nn::GPT& model, const HeadProbes& probes) : model_(model) {
    period_ = probe_period(model.config().block_size, probes);
    clean_rows_ = repeated_sequences(probes, period_);
    if (clean_rows_.size() < 2) {
      throw ValueError(Operation("patch_heads"), "the corrupted run borrows another sequence's first copy, so "
                       "it needs at least 2 repeated sequences");
    }
    std::vector<std::vector<int64_t>> corrupted = clean_rows_;
    for (size_t i = 0; i < corrupted.size(); ++i) {
      const auto& other = clean_rows_[(i + 1) % clean_rows_.size()];
      std::copy(other.begin(), other.begin() + period_, corrupted[i].begin());
    }
    clean_ = batch_of(clean_rows_);
    corrupted_ = batch_of(corrupted);
    const nn::HookFilter kept = [](const std::string& name) {
      return ends_with(name, ".attn.z") || ends_with(name, ".resid_pre") || ends_with(name, ".resid_post");
    };
    clean_cache_ = model.run_with_cache(clean_, kept);
    corrupted_cache_ = model.run_with_cache(corrupted_, kept);
    clean_metric_ = metric(clean_cache_.logits);
    corrupted_metric_ = metric(corrupted_cache_.logits);
  }

  int64_t period() const { return period_; }
  double clean_metric() const { return clean_metric_; }
  double corrupted_metric() const { return corrupted_metric_; }
  const nn::ActivationCache& clean() const { return clean_cache_; }
  const nn::ActivationCache& corrupted() const { return corrupted_cache_; }

  // The corrupted run with the hooks `hooks` adds; its recovery.
  double recovery(const std::function<void(nn::ScopedHooks&)>& add_hooks) {
    nn::ScopedHooks hooks(model_);
    add_hooks(hooks);
    const double gap = clean_metric_ - corrupted_metric_;
    return gap != 0.0 ? (metric(model_.forward(corrupted_)) - corrupted_metric_) / gap : 0.0;
  }

 private:
  // Mean log-probability of the second copy's tokens (all but its first, which nothing predicts).
  double metric(const Tensor& logits) const {
    return -mean_next_token_loss(logits, clean_rows_, period_, 2 * period_ - 1);
  }

  nn::GPT& model_;
  int64_t period_ = 0;
  std::vector<std::vector<int64_t>> clean_rows_;
  Tensor clean_, corrupted_;
  nn::ActivationCache clean_cache_, corrupted_cache_;
  double clean_metric_ = 0.0, corrupted_metric_ = 0.0;
};

// The recovery with the outputs of `heads` patched together.
double patch_outputs(PatchExperiment& run, const nn::GPTConfig& config, DType dtype,
                     const std::vector<HeadRef>& heads) {
  return run.recovery([&](nn::ScopedHooks& hooks) {
    for (int64_t layer = 0; layer < config.n_layer; ++layer) {
      const std::vector<int64_t> here = head_slots(config, layer, heads);
      if (here.empty()) continue;
      const std::string point = nn::hook_name(layer, nn::HookPoint::attn_z);
      const Tensor clean = run.clean()[point];
      const int64_t n = config.layer_heads(layer);
      const Tensor mask = one_hot_mask(n, here, {1, n, 1, 1}, dtype);
      hooks.add(point, [clean, mask](const Tensor& z) { return patched(z, clean, mask); });
    }
  });
}

std::vector<PatchRecovery> patch_each_head(PatchExperiment& run, const nn::GPTConfig& config, DType dtype) {
  std::vector<PatchRecovery> out;
  for (const HeadRef& h : model_heads(config)) out.push_back({h, patch_outputs(run, config, dtype, {h})});
  return out;
}

std::vector<HeadRef> heads_of_role(const HeadReport& report, const std::string& role) {
  std::vector<HeadRef> out;
  for (const HeadScores& s : report.heads) {
    if (s.role == role) out.push_back({s.layer, s.head});
  }
  return out;
}

// Each copy cut into four bands of positions.
std::vector<std::pair<int64_t, int64_t>> position_bands(int64_t period) {
  std::vector<std::pair<int64_t, int64_t>> bands;
  for (int64_t copy = 0; copy < 2; ++copy) {
    for (int64_t b = 0; b < 4; ++b) {
      const int64_t first = copy * period + b * period / 4, last = copy * period + (b + 1) * period / 4;
      if (last > first) bands.emplace_back(first, last);
    }
  }
  return bands;
}

std::vector<ResidualRecovery> patch_residual(PatchExperiment& run, const nn::GPTConfig& config, DType dtype) {
  std::vector<ResidualRecovery> out;
  const int64_t t = 2 * run.period();
  for (int64_t layer = 0; layer <= config.n_layer; ++layer) {
    const std::string point = layer < config.n_layer
                                  ? nn::hook_name(layer, nn::HookPoint::resid_pre)
                                  : nn::hook_name(layer - 1, nn::HookPoint::resid_post);
    const Tensor clean = run.clean()[point];
    for (const auto& [first, last] : position_bands(run.period())) {
      std::vector<int64_t> positions;
      for (int64_t i = first; i < last; ++i) positions.push_back(i);
      const Tensor mask = one_hot_mask(t, positions, {1, t, 1}, dtype);
      const double r = run.recovery([&](nn::ScopedHooks& hooks) {
        hooks.add(point, [clean, mask](const Tensor& x) { return patched(x, clean, mask); });
      });
      out.push_back({layer, first, last, r});
    }
  }
  return out;
}

}  // namespace

const char* path_input_name(PathInput input) {
  return input == PathInput::q ? "q" : (input == PathInput::k ? "k" : "v");
}

namespace {

// What `from` heads write into the residual stream, clean minus corrupted: (B,T,C).
Tensor written_difference(nn::GPT& model, const PatchExperiment& run, const std::vector<HeadRef>& from) {
  const nn::GPTConfig& config = model.config();
  const int64_t d = config.n_embd / config.n_head;
  Tensor total;
  for (const HeadRef& h : from) {
    const std::string point = nn::hook_name(h.layer, nn::HookPoint::attn_z);
    const int64_t slot = head_slots(config, h.layer, {h}).at(0);
    const Tensor diff = narrow(run.clean()[point] - run.corrupted()[point], 1, slot, 1);  // (B,1,T,d)
    const Tensor w_o = narrow((*model.transformer->h)[static_cast<size_t>(h.layer)].attn->c_proj->weight, 0,
                              slot * d, d);  // (d,C)
    const Tensor written = matmul(reshape(diff, {diff.size(0), diff.size(2), d}), w_o);
    total = total.defined() ? total + written : written;
  }
  return total;
}

// The corrupted run in which the readers of `to` (all in `layer`) take their `input` from the
// block's input plus `difference`, every other path as it was.
void add_path_hooks(nn::ScopedHooks& hooks, nn::GPT& model, int64_t layer, const std::vector<HeadRef>& to,
                    PathInput input, const Tensor& difference) {
  const nn::GPTConfig& config = model.config();
  // A layer with pruned heads has as many key/value heads as query heads (GPTConfig requires it).
  const int64_t n_heads = config.layer_heads(layer), d = config.n_embd / config.n_head;
  const int64_t kvh = n_heads == config.n_head ? config.kv_heads() : n_heads, q = n_heads * d;
  const int64_t slots = input == PathInput::q ? n_heads : kvh;
  std::vector<int64_t> chosen;
  for (int64_t slot : head_slots(config, layer, to)) chosen.push_back(input == PathInput::q ? slot : slot / (n_heads / kvh));
  const Tensor mask = one_hot_mask(slots, chosen, {1, slots, 1, 1}, difference.dtype());
  auto block_input = std::make_shared<Tensor>();
  hooks.add(nn::hook_name(layer, nn::HookPoint::resid_pre), [block_input](const Tensor& x) {
    *block_input = x;
    return x;
  });
  nn::Block* block = &(*model.transformer->h)[static_cast<size_t>(layer)];
  const auto index = static_cast<size_t>(input);
  const nn::HookPoint point = input == PathInput::q ? nn::HookPoint::attn_q
                              : input == PathInput::k ? nn::HookPoint::attn_k : nn::HookPoint::attn_v;
  hooks.add(nn::hook_name(layer, point), [=](const Tensor& value) {
    const Tensor packed = linear(block->ln_1->forward(*block_input + difference),
                                 block->attn->c_attn->weight, block->attn->c_attn->bias);
    const Tensor part = split(packed, {q, kvh * d, kvh * d}, 2)[index];
    const Tensor heads = permute(reshape(part, {part.size(0), part.size(1), slots, d}), {0, 2, 1, 3});
    return patched(value, heads, mask);
  });
}

std::vector<PathRecovery> patch_paths(nn::GPT& model, PatchExperiment& run, const HeadReport& report) {
  const std::vector<HeadRef> from = heads_of_role(report, "previous-token");
  std::vector<HeadRef> to;
  if (from.empty() || model.config().position_embedding == nn::PositionEmbedding::rope) return {};
  int64_t last_writer = 0;
  for (const HeadRef& h : from) last_writer = std::max(last_writer, h.layer);
  for (const HeadScores& s : report.heads) {
    if (s.role == "induction" && s.layer > last_writer) to.push_back({s.layer, s.head});
  }
  if (to.empty()) return {};
  const Tensor difference = written_difference(model, run, from);
  std::vector<PathRecovery> out;
  for (PathInput input : {PathInput::q, PathInput::k, PathInput::v}) {
    const double r = run.recovery([&](nn::ScopedHooks& hooks) {
      for (int64_t layer = last_writer + 1; layer < model.config().n_layer; ++layer) {
        std::vector<HeadRef> here;
        for (const HeadRef& h : to) {
          if (h.layer == layer) here.push_back(h);
        }
        if (!here.empty()) add_path_hooks(hooks, model, layer, here, input, difference);
      }
    });
    out.push_back({from, to, input, r});
  }
  return out;
}

}  // namespace

PatchingReport patch_heads(nn::GPT& model, const HeadProbes& probes, const HeadReport& report) {
  NoGradGuard no_grad;
  model.eval();
  PatchExperiment run(model, probes);
  const DType dtype = model.parameters().front().dtype();
  PatchingReport out;
  out.period = run.period();
  out.clean_metric = run.clean_metric();
  out.corrupted_metric = run.corrupted_metric();
  out.heads = patch_each_head(run, model.config(), dtype);
  for (const char* role : {"previous-token", "induction"}) {
    const std::vector<HeadRef> heads = heads_of_role(report, role);
    if (!heads.empty()) out.roles.push_back({role, heads, patch_outputs(run, model.config(), dtype, heads)});
  }
  out.residual = patch_residual(run, model.config(), dtype);
  out.paths = patch_paths(model, run, report);
  return out;
}

nlohmann::json PatchingReport::json() const {
  nlohmann::json h = nlohmann::json::array(), r = nlohmann::json::array(), p = nlohmann::json::array();
  for (const PatchRecovery& x : heads) h.push_back({{"layer", x.head.layer}, {"head", x.head.head}, {"recovery", x.recovery}});
  for (const ResidualRecovery& x : residual) {
    r.push_back({{"layer", x.layer}, {"positions", {x.first, x.last}}, {"recovery", x.recovery}});
  }
  const auto refs = [](const std::vector<HeadRef>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const HeadRef& x : list) out.push_back({x.layer, x.head});
    return out;
  };
  nlohmann::json g = nlohmann::json::array();
  for (const GroupRecovery& x : roles) g.push_back({{"role", x.role}, {"heads", refs(x.heads)}, {"recovery", x.recovery}});
  for (const PathRecovery& x : paths) {
    p.push_back({{"from", refs(x.from)}, {"to", refs(x.to)}, {"input", path_input_name(x.input)}, {"recovery", x.recovery}});
  }
  return {{"clean_metric", clean_metric}, {"corrupted_metric", corrupted_metric},
          {"patching", h}, {"role_patching", g}, {"residual_patching", r}, {"path_patching", p}};
}

std::string PatchingReport::table() const {
  std::string out = fmt::format(
      "activation patching: clean = random sequences said twice (period {}), corrupted = the same "
      "second copy after another first copy; mean log-probability of the second copy {:.3f} clean, "
      "{:.3f} corrupted; recovery of each head's output patched from the clean run:",
      period, clean_metric, corrupted_metric);
  int64_t layer = -1, next = 0;  // a pruned head's column shows "-"
  for (const PatchRecovery& x : heads) {
    if (x.head.layer != layer) {
      layer = x.head.layer;
      next = 0;
      out += fmt::format("\nlayer {}:", layer);
    }
    for (; next < x.head.head; ++next) out += fmt::format(" {:>7}", "-");
    out += fmt::format(" {:>6.0f}%", 100.0 * x.recovery);
    next = x.head.head + 1;
  }
  for (const GroupRecovery& x : roles) {
    out += fmt::format("\nthe {} heads {} together: {:.0f}%", x.role, head_list_str(x.heads), 100.0 * x.recovery);
  }
  out += "\nthe residual stream patched at positions [first, last) before each layer (layer "
         + std::to_string(residual.empty() ? 0 : residual.back().layer) + ": after the last):";
  for (size_t i = 0; i < residual.size(); ++i) {
    const ResidualRecovery& x = residual[i];
    if (i == 0 || residual[i - 1].layer != x.layer) out += fmt::format("\nlayer {}:", x.layer);
    out += fmt::format(" [{},{}) {:.0f}%", x.first, x.last, 100.0 * x.recovery);
  }
  out += "\n";
  for (const PathRecovery& x : paths) {
    out += fmt::format("path patching {} -> the {} of {}: {:.0f}% recovered\n", head_list_str(x.from),
                       x.input == PathInput::q ? "queries" : (x.input == PathInput::k ? "keys" : "values"),
                       head_list_str(x.to), 100.0 * x.recovery);
  }
  return out;
}

}  // namespace tinygpt::heads
