#include "tinygpt/heads/counterfactual.hpp"

#include <cmath>
#include <functional>
#include <memory>

#include "probe_runs.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/nn/attention.hpp"

namespace tinygpt::heads {
namespace {

constexpr double kTiny = 1e-30;  // keeps log() finite on a weight that underflowed to 0

// Per position, the total variation between next-token distributions (B,T,V) -> (B,T): both sum
// to 1, so half the l1 distance is the sum of the positive differences.
Tensor position_tvd(const Tensor& probs, const Tensor& base) { return sum(relu(probs - base), {2}); }

// Jensen-Shannon divergence of each row of p and q (B,1,T,Tk) -> (B,1,T).
Tensor row_jsd(const Tensor& p, const Tensor& q) {
  const Tensor mix = 0.5 * (p + q);
  const Tensor log_mix = log(mix + kTiny);
  return 0.5 * sum(p * (log(p + kTiny) - log_mix) + q * (log(q + kTiny) - log_mix), {3});
}

// A row's weights over its visible keys, rewritten.
using RowEdit = std::function<void(std::vector<double>& visible)>;

class CounterfactualRun {
 public:
  CounterfactualRun(nn::GPT& model, const std::vector<std::vector<int64_t>>& windows)
      : model_(model), tokens_(batch_of(windows)) {
    const int64_t t = tokens_.size(1);
    hidden_ = nn::pattern_mask(model.config().attention, t, t).to(model.parameters().front().dtype());
    hidden_values_ = hidden_.to_vector();
    NoGradGuard no_grad;
    base_ = softmax(model.forward(tokens_), -1);
  }

  // The mean total variation with the head in `slot` of `layer` (of those the layer has) given
  // rows edited by `edit`.
  double edited_tvd(int64_t layer, int64_t slot, const RowEdit& edit) {
    NoGradGuard no_grad;
    nn::ScopedHooks hooks(model_);
    hooks.add(nn::hook_name(layer, nn::HookPoint::attn_pattern), [&](const Tensor& w) {
      std::vector<double> values = w.to_vector();
      const int64_t b = w.size(0), h = w.size(1), t = w.size(2), tk = w.size(3);
      for (int64_t s = 0; s < b; ++s) {
        for (int64_t i = 0; i < t; ++i) edit_row(values, ((s * h + slot) * t + i) * tk, i * tk, tk, edit);
      }
      return Tensor::from(values, w.shape(), w.dtype());
    });
    return mean(position_tvd(softmax(model_.forward(tokens_), -1), base_)).item();
  }

  double adversarial_jsd(int64_t layer, int64_t slot, const CounterfactualOptions& options);

 private:
  void edit_row(std::vector<double>& values, int64_t row, int64_t mask_row, int64_t tk, const RowEdit& edit) const {
    std::vector<double> visible;
    for (int64_t j = 0; j < tk; ++j) {
      if (hidden_values_[static_cast<size_t>(mask_row + j)] == 0.0) visible.push_back(values[static_cast<size_t>(row + j)]);
    }
    edit(visible);
    size_t next = 0;
    for (int64_t j = 0; j < tk; ++j) {
      if (hidden_values_[static_cast<size_t>(mask_row + j)] == 0.0) values[static_cast<size_t>(row + j)] = visible[next++];
    }
  }

  nn::GPT& model_;
  Tensor tokens_;
  Tensor hidden_;  // (T,T): 1 where a query may not see a key
  std::vector<double> hidden_values_;
  Tensor base_;    // (B,T,V) next-token distributions of the intact model
};

// One Adam step of gradient descent on `x` (a leaf) in place.
struct Adam {
  std::vector<double> m, v;
  int64_t t = 0;
  void step(Tensor& x, double lr) {
    const std::vector<double> g = x.grad().to_vector();
    std::vector<double> values = x.to_vector();
    m.resize(g.size(), 0.0);
    v.resize(g.size(), 0.0);
    ++t;
    for (size_t i = 0; i < g.size(); ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
      const double m_hat = m[i] / (1.0 - std::pow(0.9, t)), v_hat = v[i] / (1.0 - std::pow(0.999, t));
      values[i] -= lr * m_hat / (std::sqrt(v_hat) + 1e-8);
    }
    x.copy_(Tensor::from(values, x.shape()));
    x.zero_grad();
  }
};

double CounterfactualRun::adversarial_jsd(int64_t layer, int64_t slot, const CounterfactualOptions& options) {
  const nn::GPTConfig& config = model_.config();
  const int64_t b = tokens_.size(0), t = tokens_.size(1), heads = config.layer_heads(layer);
  const DType dtype = base_.dtype();
  // The search starts from a random nudge: at the original pattern the divergence is at its
  // minimum, where its gradient is zero. Seeded by the head's original number.
  const int64_t head = config.kept_heads(layer)[static_cast<size_t>(slot)];
  Generator gen(options.seed + static_cast<uint64_t>(layer * config.n_head + head));
  Tensor delta = Tensor::randn({b, 1, t, t}, gen, dtype, 0.0, 0.5).set_requires_grad();
  std::vector<double> pick(static_cast<size_t>(heads), 0.0);
  pick[static_cast<size_t>(slot)] = 1.0;
  const Tensor mask = Tensor::from(pick, {1, heads, 1, 1}, dtype);
  const Tensor hidden = reshape(hidden_, {1, 1, t, t});
  std::vector<double> best(static_cast<size_t>(b), 0.0);  // the original pattern: 0, within any epsilon
  Adam adam;
  for (int64_t step = 0; step <= options.steps; ++step) {
    Tensor divergence;
    nn::ScopedHooks hooks(model_);
    hooks.add(nn::hook_name(layer, nn::HookPoint::attn_pattern), [&](const Tensor& w) {
      const Tensor original = narrow(w.detach(), 1, slot, 1);  // (B,1,T,T)
      const Tensor edited = softmax(masked_fill(log(original + kTiny) + delta, hidden, -1e30), -1);
      divergence = mean(row_jsd(edited, original), {1, 2});  // (B)
      return w.detach() * (1.0 - mask) + edited * mask;
    });
    const Tensor tvd = position_tvd(softmax(model_.forward(tokens_), -1), base_);  // (B,T)
    const std::vector<double> moved = max(tvd, {1}).to_vector(), reached = divergence.to_vector();
    for (size_t s = 0; s < best.size(); ++s) {
      if (moved[s] <= options.epsilon) best[s] = std::max(best[s], reached[s]);
    }
    if (step == options.steps) break;
    // Ascend the divergence; a prediction moved beyond epsilon costs far more than any gain.
    const Tensor objective = sum(10.0 / options.epsilon * sum(relu(tvd - options.epsilon), {1}) - divergence);
    objective.backward();
    adam.step(delta, 0.1);
  }
  model_.zero_grad();
  double total = 0.0;
  for (double x : best) total += x;
  return total / static_cast<double>(best.size());
}

}  // namespace

std::vector<HeadCounterfactual> attention_counterfactuals(nn::GPT& model,
                                                          const std::vector<std::vector<int64_t>>& windows,
                                                          const CounterfactualOptions& options) {
  if (!(options.epsilon > 0.0 && options.epsilon <= 1.0) || windows.empty() || options.steps < 0) {
    throw ValueError(Operation("attention_counterfactuals"), fmt::format("needs epsilon in (0, 1], steps >= 0 "
                                 "and a window; got epsilon {}, steps {}, {} windows",
                                 options.epsilon, options.steps, windows.size()));
  }
  model.eval();
  CounterfactualRun run(model, windows);
  Generator gen(options.seed);
  const RowEdit uniform = [](std::vector<double>& row) {
    for (double& x : row) x = 1.0 / static_cast<double>(row.size());
  };
  const RowEdit permute_row = [&gen](std::vector<double>& row) {
    gen.shuffle_front(row, static_cast<int64_t>(row.size()));
  };
  std::vector<HeadCounterfactual> out;
  for (int64_t layer = 0; layer < model.config().n_layer; ++layer) {
    const std::vector<int64_t> numbers = model.config().kept_heads(layer);  // pruned heads have none
    for (int64_t slot = 0; slot < static_cast<int64_t>(numbers.size()); ++slot) {
      out.push_back({{layer, numbers[static_cast<size_t>(slot)]}, run.edited_tvd(layer, slot, uniform),
                     run.edited_tvd(layer, slot, permute_row), run.adversarial_jsd(layer, slot, options)});
    }
  }
  return out;
}

nlohmann::json counterfactual_json(const std::vector<HeadCounterfactual>& heads) {
  nlohmann::json list = nlohmann::json::array();
  for (const HeadCounterfactual& h : heads) {
    list.push_back({{"layer", h.head.layer}, {"head", h.head.head}, {"uniform_tvd", h.uniform_tvd},
                    {"permuted_tvd", h.permuted_tvd}, {"adversarial_jsd", h.adversarial_jsd}});
  }
  return list;
}

}  // namespace tinygpt::heads
