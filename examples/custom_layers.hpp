#pragma once
// Writing your own op and modules on the public API: what examples/custom_module.cpp trains and
// tests/nn/test_module_gradcheck.cpp gradient-checks. None of these ship in the library.
#include <cmath>

#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/nn.hpp"

namespace custom {

using tinygpt::Tensor;

// A new differentiable op: SiLU(x) = x * sigmoid(x). The forward loops over raw memory for both
// dtypes; the backward, recorded right beside it, maps the output gradient to the input's.
inline Tensor silu(const Tensor& x) {
  Tensor y = tinygpt::dispatch_float(x.dtype(), "silu", [&](auto tag) {
    using T = decltype(tag);
    Tensor out = Tensor::empty(x.shape(), x.dtype());
    const T* in = x.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] / (T(1) + std::exp(-in[i]));
    return out;
  });
  return tinygpt::record("silu", y, {x}, [x = x.detach()](const Tensor& g) {
    const Tensor s = tinygpt::sigmoid(x);  // d/dx x s(x) = s + x s (1 - s)
    return std::vector<Tensor>{g * (s + x * s * (1.0 - s))};
  });
}

// RMSNorm (Zhang & Sennrich): x / sqrt(mean(x^2) + eps) * gain, over the last axis.
class RMSNorm : public tinygpt::nn::Module {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6) : eps_(eps) {
    gain = register_parameter("weight", Tensor::ones({dim}));
  }
  Tensor forward(const Tensor& x) const {
    return x / tinygpt::sqrt(tinygpt::mean(x * x, {-1}, /*keepdim=*/true) + eps_) * gain;
  }
  Tensor gain;  // (dim)

 private:
  double eps_;
};

// SwiGLU feed-forward (Shazeer 2020), with LLaMA's names: w2(silu(w1(x)) * w3(x)), w1 and w3
// the gated pair, w2 the projection back down.
class SwiGLU : public tinygpt::nn::Module {
 public:
  SwiGLU(int64_t dim, int64_t hidden, tinygpt::Generator& gen) {
    w1 = register_module("w1", std::make_shared<tinygpt::nn::Linear>(dim, hidden, false, gen));
    w3 = register_module("w3", std::make_shared<tinygpt::nn::Linear>(dim, hidden, false, gen));
    w2 = register_module("w2", std::make_shared<tinygpt::nn::Linear>(hidden, dim, false, gen));
  }
  Tensor forward(const Tensor& x) const {  // x (B,T,C) -> (B,T,C), through (B,T,hidden)
    return w2->forward(silu(w1->forward(x)) * w3->forward(x));
  }
  std::shared_ptr<tinygpt::nn::Linear> w1, w3, w2;
};

// A residual block of the two, the unit a LLaMA-style model stacks.
class ResidualSwiGLU : public tinygpt::nn::Module {
 public:
  ResidualSwiGLU(int64_t dim, int64_t hidden, tinygpt::Generator& gen) {
    norm = register_module("norm", std::make_shared<RMSNorm>(dim));
    ffn = register_module("ffn", std::make_shared<SwiGLU>(dim, hidden, gen));
  }
  Tensor forward(const Tensor& x) const { return x + ffn->forward(norm->forward(x)); }
  std::shared_ptr<RMSNorm> norm;
  std::shared_ptr<SwiGLU> ffn;
};

}  // namespace custom
