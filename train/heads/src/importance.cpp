#include "tinygpt/heads/importance.hpp"

#include <cmath>

#include "probe_runs.hpp"
#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::heads {

Tensor gated_loss(nn::GPT& model, const std::vector<Tensor>& gates, const std::vector<int64_t>& window) {
  const nn::GPTConfig& config = model.config();
  if (static_cast<int64_t>(gates.size()) != config.n_layer || window.size() < 2) {
    throw ValueError(Operation("gated_loss"), fmt::format("needs one gate per layer ({}) and a window of at "
                                 "least 2 tokens, got {} gates and {} tokens",
                                 config.n_layer, gates.size(), window.size()));
  }
  nn::ScopedHooks hooks(model);
  for (int64_t layer = 0; layer < config.n_layer; ++layer) {
    const Tensor gate = reshape(gates[static_cast<size_t>(layer)], {1, config.layer_heads(layer), 1, 1});
    hooks.add(nn::hook_name(layer, nn::HookPoint::attn_z), [gate](const Tensor& z) { return z * gate; });
  }
  const auto t = static_cast<int64_t>(window.size());
  const Tensor inputs = Tensor::from_ids(std::vector<int64_t>(window.begin(), window.end() - 1), {1, t - 1});
  const Tensor targets = Tensor::from_ids(std::vector<int64_t>(window.begin() + 1, window.end()), {1, t - 1});
  return model.loss(inputs, targets);
}

std::vector<HeadImportance> head_importance(nn::GPT& model,
                                            const std::vector<std::vector<int64_t>>& windows) {
  if (windows.empty()) throw ValueError(Operation("head_importance"), "needs at least one evaluation window");
  const nn::GPTConfig& config = model.config();
  const DType dtype = model.parameters().front().dtype();
  const auto layers = static_cast<size_t>(config.n_layer);
  std::vector<std::vector<double>> total(layers);  // per layer, per head it has
  for (size_t l = 0; l < layers; ++l) total[l].assign(static_cast<size_t>(config.layer_heads(static_cast<int64_t>(l))), 0.0);
  model.eval();
  for (const std::vector<int64_t>& window : windows) {
    std::vector<Tensor> gates;
    for (size_t l = 0; l < layers; ++l) {
      gates.push_back(Tensor::ones({static_cast<int64_t>(total[l].size())}, dtype).set_requires_grad());
    }
    gated_loss(model, gates, window).backward();
    for (size_t l = 0; l < layers; ++l) {
      const std::vector<double> grad = gates[l].grad().to_vector();
      for (size_t h = 0; h < grad.size(); ++h) total[l][h] += std::abs(grad[h]);  // mean of |.|, per window
    }
  }
  model.zero_grad();
  std::vector<HeadImportance> out;
  for (size_t l = 0; l < layers; ++l) {
    double norm = 0.0;
    for (double& x : total[l]) {
      x /= static_cast<double>(windows.size());
      norm += x * x;
    }
    norm = std::sqrt(norm);
    const std::vector<int64_t> numbers = config.kept_heads(static_cast<int64_t>(l));
    for (size_t h = 0; h < total[l].size(); ++h) {
      out.push_back({{static_cast<int64_t>(l), numbers[h]}, total[l][h], norm > 0.0 ? total[l][h] / norm : 0.0});
    }
  }
  return out;
}

std::vector<HeadImportance> in_context_importance(nn::GPT& model, const HeadProbes& probes) {
  return head_importance(model, repeated_sequences(probes, probe_period(model.config().block_size, probes)));
}

nlohmann::json importance_json(const std::vector<HeadImportance>& importance) {
  nlohmann::json list = nlohmann::json::array();
  for (const HeadImportance& i : importance) {
    list.push_back({{"layer", i.head.layer}, {"head", i.head.head}, {"raw", i.raw}, {"normalised", i.normalised}});
  }
  return list;
}

}  // namespace tinygpt::heads
