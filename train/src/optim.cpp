#include "tinygpt/train/optim.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::train {
namespace {

// Calls f(param, weight_decay, index) for every parameter that has a gradient; index counts all
// parameters in group order (the optimiser's buffers are kept in that order).
template <class F>
void for_each_param(const std::vector<ParamGroup>& groups, F&& f) {
  size_t index = 0;
  for (const auto& group : groups) {
    for (const auto& [name, p] : group.params) {
      if (p.grad().defined()) f(p, group.weight_decay, index);
      ++index;
    }
  }
}

// Calls f(param, weight_decay, index, lo, hi) for this thread's share [lo, hi) of every
// parameter's elements, in one parallel region for them all: most of a small model's tensors are
// too small to be worth sharing alone, and together they are. Optimisers update every element
// alone, so the values do not depend on the split.
template <class F>
void for_each_param_shared(const std::vector<ParamGroup>& groups, F&& f) {
  int64_t total = 0;
  for_each_param(groups, [&](const Tensor& p, double, size_t) { total += p.numel(); });
#pragma omp parallel if (total > (1 << 16))
  {
    const int64_t thread = omp_get_thread_num(), threads = omp_get_num_threads();
    for_each_param(groups, [&](const Tensor& p, double wd, size_t i) {
      const int64_t n = p.numel();
      f(p, wd, i, n * thread / threads, n * (thread + 1) / threads);
    });
  }
}

std::vector<Tensor> zeros_like_params(const std::vector<ParamGroup>& groups) {
  std::vector<Tensor> out;
  for (const auto& group : groups) {
    for (const auto& [name, p] : group.params) out.push_back(Tensor::zeros(p.shape(), p.dtype()));
  }
  return out;
}

nn::NamedTensors named_buffers(const std::vector<ParamGroup>& groups,
                               const std::vector<std::pair<std::string, const std::vector<Tensor>*>>& kinds) {
  nn::NamedTensors out;
  for (const auto& [kind, buffers] : kinds) {
    size_t index = 0;
    for (const auto& group : groups) {
      for (const auto& [name, p] : group.params) out.emplace_back(kind + "." + name, (*buffers)[index++]);
    }
  }
  return out;
}

// A state training cannot have produced (NaN, infinity, a negative second moment) would make a
// resumed run diverge again from its "last good" checkpoint: refused, naming the tensor.
void check_values(const Tensor& t, const std::string& key, bool non_negative) {
  dispatch_float(t.dtype(), "optimizer state", [&](auto tag) {
    using T = decltype(tag);
    const T* v = t.data<T>();
    for (int64_t j = 0; j < t.numel(); ++j) {
      if (!std::isfinite(v[j]) || (non_negative && v[j] < 0)) {
        throw ValueError(fmt::format("optimizer state: '{}' holds {} at element {}{}", key, v[j], j,
                                     v[j] < 0 ? " (a second moment is never negative)" : ""));
      }
    }
  });
}

struct BufferKind {
  std::string name;
  std::vector<Tensor>* buffers;
  bool non_negative;
};

// Every tensor of `state` must be one of `kinds`' buffers of a parameter of the model, in
// floats: a moment for a parameter the model lacks belongs to another model.
void check_state_names(const std::vector<ParamGroup>& groups, const nn::NamedTensors& state,
                       const std::vector<BufferKind>& kinds) {
  std::set<std::string> expected;
  for (const BufferKind& kind : kinds) {
    for (const auto& group : groups) {
      for (const auto& [name, p] : group.params) expected.insert(kind.name + "." + name);
    }
  }
  for (const auto& [key, tensor] : state) {
    if (expected.count(key) == 0) {
      throw ValueError(fmt::format("optimizer state: '{}' is the state of no parameter of the model", key));
    }
    if (!is_floating(tensor.dtype())) {
      throw ValueError(fmt::format("optimizer state: '{}' holds integers ({}), not a moment",
                                   key, dtype_name(tensor.dtype())));
    }
  }
}

void load_buffers(const std::vector<ParamGroup>& groups, const nn::NamedTensors& state,
                  const std::vector<BufferKind>& kinds) {
  check_state_names(groups, state, kinds);
  for (const auto& [kind, buffers, non_negative] : kinds) {
    size_t index = 0;
    for (const auto& group : groups) {
      for (const auto& [name, p] : group.params) {
        const std::string key = kind + "." + name;
        auto it = std::find_if(state.begin(), state.end(),
                               [&](const auto& entry) { return entry.first == key; });
        if (it == state.end()) {
          throw ValueError(fmt::format("optimizer state: missing '{}'", key));
        }
        if (it->second.shape() != p.shape()) {
          throw ShapeError(fmt::format("optimizer state: '{}' has shape {}, parameter has {}", key,
                                       it->second.shape().str(), p.shape().str()));
        }
        check_values(it->second, key, non_negative);
        (*buffers)[index++].copy_(it->second);
      }
    }
  }
}

}  // namespace

std::vector<ParamGroup> decay_groups(const nn::Module& model, double weight_decay) {
  ParamGroup decay{{}, weight_decay}, no_decay{{}, 0.0};
  for (auto& [name, p] : model.named_parameters()) {
    (p.ndim() >= 2 ? decay : no_decay).params.emplace_back(name, p);
  }
  return {decay, no_decay};
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, double lr)
    : groups_(std::move(groups)), lr_(lr) {
  if (!(lr > 0.0)) throw ValueError(Operation("optimizer"), fmt::format("lr must be positive, got {}", lr));
}

void Optimizer::zero_grad() {
  for (auto& group : groups_) {
    for (auto& [name, p] : group.params) p.zero_grad();
  }
}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options)
    : Optimizer(std::move(groups), options.lr), options_(options) {
  if (!(options.beta1 >= 0 && options.beta1 < 1) || !(options.beta2 >= 0 && options.beta2 < 1)) {
    throw ValueError(Operation("AdamW"), fmt::format("betas must be in [0, 1), got ({}, {})", options.beta1,
                                 options.beta2));
  }
  m_ = zeros_like_params(groups_);
  v_ = zeros_like_params(groups_);
}

void AdamW::step() {
  ++t_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double correction1 = 1.0 - std::pow(b1, static_cast<double>(t_));
  const double correction2 = 1.0 - std::pow(b2, static_cast<double>(t_));
  const double step_size = lr_ / correction1;
  const double eps = options_.eps;
  for_each_param_shared(groups_, [&](Tensor p, double wd, size_t i, int64_t lo, int64_t hi) {
    dispatch_float(p.dtype(), "AdamW", [&](auto tag) {
      using T = decltype(tag);
      T* w = p.data<T>();
      const T* g = p.grad().data<T>();
      T* m = m_[i].data<T>();
      T* v = v_[i].data<T>();
      const T decay = static_cast<T>(1.0 - lr_ * wd);
      for (int64_t j = lo; j < hi; ++j) {
        m[j] = static_cast<T>(b1) * m[j] + static_cast<T>(1 - b1) * g[j];
        v[j] = static_cast<T>(b2) * v[j] + static_cast<T>(1 - b2) * g[j] * g[j];
        const T denom = std::sqrt(v[j] / static_cast<T>(correction2)) + static_cast<T>(eps);
        w[j] = w[j] * decay - static_cast<T>(step_size) * m[j] / denom;
      }
    });
  });
}

nn::NamedTensors AdamW::state() const {
  return named_buffers(groups_, {{"exp_avg", &m_}, {"exp_avg_sq", &v_}});
}

void AdamW::load_state(const nn::NamedTensors& state, int64_t steps_taken) {
  load_buffers(groups_, state, {{"exp_avg", &m_, false}, {"exp_avg_sq", &v_, true}});
  t_ = steps_taken;
}

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum)
    : Optimizer(std::move(groups), lr), momentum_(momentum) {
  if (!(momentum >= 0 && momentum < 1)) {
    throw ValueError(fmt::format("SGD: momentum must be in [0, 1), got {}", momentum));
  }
  velocity_ = zeros_like_params(groups_);
}

void SGD::step() {
  ++t_;
  const bool first = t_ == 1;
  for_each_param_shared(groups_, [&](Tensor p, double wd, size_t i, int64_t lo, int64_t hi) {
    dispatch_float(p.dtype(), "SGD", [&](auto tag) {
      using T = decltype(tag);
      T* w = p.data<T>();
      const T* g = p.grad().data<T>();
      T* buf = velocity_[i].data<T>();
      for (int64_t j = lo; j < hi; ++j) {
        const T d = g[j] + static_cast<T>(wd) * w[j];
        // As torch: the first step seeds the momentum buffer with the gradient itself.
        buf[j] = first ? d : static_cast<T>(momentum_) * buf[j] + d;
        w[j] -= static_cast<T>(lr_) * buf[j];
      }
    });
  });
}

nn::NamedTensors SGD::state() const { return named_buffers(groups_, {{"momentum", &velocity_}}); }

void SGD::load_state(const nn::NamedTensors& state, int64_t steps_taken) {
  load_buffers(groups_, state, {{"momentum", &velocity_, false}});
  t_ = steps_taken;
}

namespace {

// Every gradient cut into pieces of at most kChunk elements, in parameter order: the unit of
// clip_grad_norm's parallel work. Partial sums are kept per piece and added in this order, so
// the norm is the same for any thread count.
constexpr int64_t kChunk = int64_t{1} << 15;

struct GradChunk {
  Tensor grad;
  int64_t begin, end;
};

std::vector<GradChunk> grad_chunks(const std::vector<Tensor>& params) {
  std::vector<GradChunk> chunks;
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    for (int64_t lo = 0; lo < p.numel(); lo += kChunk) {
      chunks.push_back({p.grad(), lo, std::min(p.numel(), lo + kChunk)});
    }
  }
  return chunks;
}

}  // namespace

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  const std::vector<GradChunk> chunks = grad_chunks(params);
  const auto n = static_cast<int64_t>(chunks.size());
  std::vector<double> partial(chunks.size(), 0.0);
#pragma omp parallel for schedule(static) if (n > 1)
  for (int64_t c = 0; c < n; ++c) {
    const GradChunk& chunk = chunks[static_cast<size_t>(c)];
    double acc = 0.0;
    if (chunk.grad.dtype() == DType::f32) {
      const float* g = chunk.grad.data<float>();
#pragma omp simd reduction(+ : acc)
      for (int64_t j = chunk.begin; j < chunk.end; ++j) acc += static_cast<double>(g[j]) * g[j];
    } else if (chunk.grad.dtype() == DType::f64) {
      const double* g = chunk.grad.data<double>();
#pragma omp simd reduction(+ : acc)
      for (int64_t j = chunk.begin; j < chunk.end; ++j) acc += g[j] * g[j];
    }
    partial[static_cast<size_t>(c)] = acc;
  }
  double total = 0.0;
  for (double v : partial) total += v;
  const double norm = std::sqrt(total);
  if (max_norm > 0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    // .grad is a private buffer (see tape.cpp): scaling it in place is safe.
#pragma omp parallel for schedule(static) if (n > 1)
    for (int64_t c = 0; c < n; ++c) {
      const GradChunk& chunk = chunks[static_cast<size_t>(c)];
      dispatch_float(chunk.grad.dtype(), "clip_grad_norm", [&](auto tag) {
        using T = decltype(tag);
        T* g = Tensor(chunk.grad).data<T>();
        for (int64_t j = chunk.begin; j < chunk.end; ++j) g[j] *= static_cast<T>(scale);
      });
    }
  }
  return norm;
}

double CosineSchedule::at(int64_t step) const {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (step >= total) return min_lr;
  const double progress =
      static_cast<double>(step - warmup) / static_cast<double>(std::max<int64_t>(1, total - warmup));
  return min_lr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (lr - min_lr);
}

}  // namespace tinygpt::train
