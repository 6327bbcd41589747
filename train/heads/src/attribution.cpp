#include "tinygpt/heads/attribution.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "probe_runs.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/heads/head_analysis.hpp"

namespace tinygpt::heads {
namespace {

std::vector<double> normalised(std::vector<double> v) {
  const double total = std::accumulate(v.begin(), v.end(), 0.0);
  if (total > 0) {
    for (double& x : v) x /= total;
  }
  return v;
}

// Mean over heads of a (H,T,T) map: (T,T) row-major.
std::vector<double> head_mean(const Tensor& map) {
  const int64_t h = map.size(0), t = map.size(1);
  const float* a = map.data<float>();
  std::vector<double> out(static_cast<size_t>(t * t), 0.0);
  for (int64_t k = 0; k < h; ++k) {
    for (int64_t i = 0; i < t * t; ++i) out[static_cast<size_t>(i)] += a[k * t * t + i] / static_cast<double>(h);
  }
  return out;
}

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean_rank = 0.5 * static_cast<double>(i + j) + 1.0;
    for (size_t k = i; k <= j; ++k) r[order[k]] = mean_rank;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) {
    throw ShapeError(fmt::format("spearman: {} values against {}", a.size(), b.size()));
  }
  if (a.size() < 2) return NAN;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = 0.5 * static_cast<double>(a.size() + 1);
  double cov = 0.0, va = 0.0, vb = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : NAN;
}

std::vector<double> attention_rollout(const std::vector<Tensor>& maps, int64_t position) {
  if (maps.empty()) throw ValueError(Operation("attention_rollout"), "no attention maps");
  const int64_t t = maps[0].size(1);
  if (position < 0 || position >= t) {
    throw IndexError(Operation("attention_rollout"),
                     fmt::format("position {} outside a sequence of {}", position, t));
  }
  // The query's row of A'_L ... A'_1, carried down one layer at a time: row <- row A'_l.
  std::vector<double> row(static_cast<size_t>(t), 0.0);
  row[static_cast<size_t>(position)] = 1.0;
  for (auto layer = maps.rbegin(); layer != maps.rend(); ++layer) {
    const std::vector<double> a = head_mean(*layer);
    std::vector<double> next(static_cast<size_t>(t), 0.0);
    for (int64_t i = 0; i < t; ++i) {
      const double ri = row[static_cast<size_t>(i)];
      if (ri == 0.0) continue;
      double total = 1.0;  // the identity's mass; the attention row sums to 1 (or 0 if masked)
      for (int64_t j = 0; j < t; ++j) total += a[static_cast<size_t>(i * t + j)];
      for (int64_t j = 0; j < t; ++j) {
        const double mix = 0.5 * a[static_cast<size_t>(i * t + j)] + (i == j ? 0.5 : 0.0);
        next[static_cast<size_t>(j)] += ri * mix / (0.5 * total);
      }
    }
    row = std::move(next);
  }
  row.resize(static_cast<size_t>(position + 1));
  return normalised(row);
}

Attribution attribute(nn::GPT& model, const std::vector<int64_t>& ids, int64_t position) {
  const auto t = static_cast<int64_t>(ids.size());
  if (position < 0 || position >= t) {
    throw IndexError(Operation("attribute"),
                     fmt::format("position {} is outside the text's {} tokens [0, {})",
                                 position, t, t));
  }
  if (t > model.config().block_size) {
    throw IndexError(Operation("attribute"), fmt::format("{} tokens exceed the context length {}", t,
                                 model.config().block_size));
  }
  Attribution out;
  out.position = position;
  const std::vector<Tensor> maps = attention_maps(model, ids);  // per layer (H,T,T)
  for (const Tensor& map : maps) {
    const std::vector<double> a = head_mean(map);
    out.attention.emplace_back(a.begin() + position * t, a.begin() + position * t + position + 1);
  }
  out.rollout = attention_rollout(maps, position);

  model.eval();
  Tensor x;  // the input embeddings as a leaf: (1,T,C)
  Tensor logits;
  {
    nn::ScopedHooks hooks(model);
    hooks.add(nn::hook_name(0, nn::HookPoint::resid_pre), [&x](const Tensor& value) {
      x = value.detach().clone().set_requires_grad();
      return x;
    });
    logits = model.forward(batch_of({ids}));  // (1,T,V)
  }
  const Tensor row = reshape(narrow(log_softmax(logits, -1), 1, position, 1), {-1});  // (V)
  out.target_is_next = position + 1 < t;
  if (out.target_is_next) {
    out.target = ids[static_cast<size_t>(position + 1)];
  } else {
    const std::vector<double> lp = row.to_vector();
    out.target = std::max_element(lp.begin(), lp.end()) - lp.begin();
  }
  narrow(row, 0, out.target, 1).backward(Tensor::ones({1}, row.dtype()));
  const std::vector<double> g = x.grad().to_vector(), v = x.to_vector();
  const int64_t c = x.size(2);
  for (int64_t j = 0; j <= position; ++j) {
    double dot = 0.0;
    for (int64_t k = 0; k < c; ++k) dot += g[static_cast<size_t>(j * c + k)] * v[static_cast<size_t>(j * c + k)];
    out.grad_x_input.push_back(std::abs(dot));
  }
  out.grad_x_input = normalised(out.grad_x_input);
  model.zero_grad();
  for (const auto& a : out.attention) out.attention_spearman.push_back(spearman(a, out.grad_x_input));
  out.rollout_spearman = spearman(out.rollout, out.grad_x_input);
  return out;
}

std::string attribution_table(const Attribution& a, const std::vector<std::string>& labels) {
  std::string out = fmt::format("{:>4} {:<6}", "pos", "token");
  for (size_t l = 0; l < a.attention.size(); ++l) out += fmt::format(" {:>8}", fmt::format("attn L{}", l));
  out += fmt::format(" {:>8} {:>9}\n", "rollout", "grad*in");
  for (int64_t j = 0; j <= a.position; ++j) {
    const auto i = static_cast<size_t>(j);
    out += fmt::format("{:>4} {:<6}", j, i < labels.size() ? labels[i] : "?");
    for (const auto& layer : a.attention) out += fmt::format(" {:>8.3f}", layer[i]);
    out += fmt::format(" {:>8.3f} {:>9.3f}\n", a.rollout[i], a.grad_x_input[i]);
  }
  out += "Spearman rank correlation with gradient x input:";
  for (size_t l = 0; l < a.attention_spearman.size(); ++l) {
    out += fmt::format(" attention layer {} {:.2f},", l, a.attention_spearman[l]);
  }
  out += fmt::format(" rollout {:.2f}\n", a.rollout_spearman);
  return out;
}

}  // namespace tinygpt::heads
