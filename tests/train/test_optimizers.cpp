// AdamW and SGD against their formulas (torch.optim's), element by element, and the same values
// on 1 and 2 threads: the optimisers share every parameter's elements between the threads, the
// small tensors (biases, LayerNorm) included.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "threads_scope.hpp"
#include "tinygpt/autograd.hpp"
#include "tinygpt/train/optim.hpp"

using namespace tinygpt;
using tinygpt::testing::ThreadsScope;

namespace {

// Two groups as decay_groups makes them: a large and a tiny tensor with weight decay, a tiny and
// a mid-sized one without; over 2^16 elements in all, so the update runs on the whole team.
struct Params {
  std::vector<Tensor> all;
  std::vector<train::ParamGroup> groups;
};

Params make_params(DType dtype) {
  Generator gen(11);
  Params out;
  const std::vector<int64_t> sizes{70000, 3, 1, 5000};
  for (int64_t n : sizes) {
    out.all.push_back(Tensor::randn({n}, gen, dtype).set_requires_grad());
  }
  out.groups = {{{{"w0", out.all[0]}, {"w1", out.all[1]}}, 0.1},
                {{{"b0", out.all[2]}, {"b1", out.all[3]}}, 0.0}};
  return out;
}

void set_grads(const Params& params, uint64_t seed) {
  Generator gen(seed);
  for (Tensor p : params.all) p.set_grad(Tensor::randn(p.shape(), gen, p.dtype()));
}

std::vector<std::vector<double>> values_of(const Params& params) {
  std::vector<std::vector<double>> out;
  for (const Tensor& p : params.all) out.push_back(p.to_vector());
  return out;
}

double decay_of(size_t tensor) { return tensor < 2 ? 0.1 : 0.0; }

// The parameters' values after the steps, each within `tolerance` (relative, and absolute near
// zero) of the formula's.
std::vector<std::vector<double>> require_close(const Params& params,
                                               const std::vector<std::vector<double>>& want,
                                               double tolerance) {
  const auto got = values_of(params);
  for (size_t t = 0; t < want.size(); ++t) {
    for (size_t j = 0; j < want[t].size(); ++j) {
      REQUIRE(got[t][j] == Approx(want[t][j]).epsilon(tolerance).margin(tolerance));
    }
  }
  return got;
}

}  // namespace

TEST_CASE("AdamW follows torch.optim.AdamW's update, the same on 1 and 2 threads",
          "[train][optim]") {
  const train::AdamWOptions options{0.01, 0.9, 0.95, 1e-8};
  std::vector<std::vector<double>> results[2];
  for (int threads : {1, 2}) {
    ThreadsScope scope(threads);
    Params params = make_params(DType::f64);
    auto want = values_of(params);
    std::vector<std::vector<double>> m, v;
    for (const auto& w : want) {
      m.emplace_back(w.size(), 0.0);
      v.emplace_back(w.size(), 0.0);
    }
    train::AdamW adamw(params.groups, options);
    for (int step = 1; step <= 3; ++step) {
      set_grads(params, 100 + step);
      for (size_t t = 0; t < want.size(); ++t) {
        const auto g = params.all[t].grad().to_vector();
        for (size_t j = 0; j < g.size(); ++j) {
          m[t][j] = 0.9 * m[t][j] + 0.1 * g[j];
          v[t][j] = 0.95 * v[t][j] + 0.05 * g[j] * g[j];
          const double m_hat = m[t][j] / (1 - std::pow(0.9, step));
          const double v_hat = v[t][j] / (1 - std::pow(0.95, step));
          want[t][j] =
              want[t][j] * (1 - 0.01 * decay_of(t)) - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8);
        }
      }
      adamw.step();
    }
    results[threads - 1] = require_close(params, want, 1e-12);
  }
  REQUIRE(results[0] == results[1]);
}

TEST_CASE("SGD with momentum follows torch.optim.SGD's update, the same on 1 and 2 threads",
          "[train][optim]") {
  std::vector<std::vector<double>> results[2];
  for (int threads : {1, 2}) {
    ThreadsScope scope(threads);
    Params params = make_params(DType::f32);
    auto want = values_of(params);
    std::vector<std::vector<double>> buf(want.size());
    train::SGD sgd(params.groups, 0.05, 0.9);
    for (int step = 1; step <= 3; ++step) {
      set_grads(params, 200 + step);
      for (size_t t = 0; t < want.size(); ++t) {
        const auto g = params.all[t].grad().to_vector();
        if (step == 1) buf[t].assign(g.size(), 0.0);
        for (size_t j = 0; j < g.size(); ++j) {
          const double d = g[j] + decay_of(t) * want[t][j];
          buf[t][j] = step == 1 ? d : 0.9 * buf[t][j] + d;
          want[t][j] -= 0.05 * buf[t][j];
        }
      }
      sgd.step();
    }
    results[threads - 1] = require_close(params, want, 1e-5);
  }
  REQUIRE(results[0] == results[1]);
}
