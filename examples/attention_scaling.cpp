// Why attention divides scores by sqrt(d_k): dot products of random unit-variance vectors have
// variance d_k, so unscaled softmax saturates (one key takes nearly all the weight, and the
// softmax's Jacobian, the gradient that reaches the scores, shrinks towards zero) as d_k grows,
// while scaled scores keep unit variance at every width. For each d_k it prints the scores'
// standard deviation, the mean max probability and the mean Frobenius norm of the softmax's
// Jacobian diag(p) - p p^T, unscaled and scaled. `--json` prints the same numbers as JSON.
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/ops.hpp"

using namespace tinygpt;

namespace {

constexpr int64_t kKeys = 16, kTrials = 200;

// ||diag(p) - p p^T||_F^2 = sum_i p_i^2 (1 - p_i)^2 + sum_i p_i^2 (sum_j p_j^2 - p_i^2), averaged
// over the rows of `p` (trials, 1, keys). Every term is >= 0: summed as one polynomial, a nearly
// one-hot row cancels to a small negative number.
double mean_jacobian_norm(const Tensor& p) {
  const Tensor squares = p * p;
  const Tensor others = relu(sum(squares, {-1}, true) - squares);
  return mean(sqrt(sum(squares * (1.0 - p) * (1.0 - p) + squares * others, {-1}))).item();
}

nlohmann::json statistics(const Tensor& scores) {
  const Tensor p = softmax(scores, -1);
  const double spread = std::sqrt(mean(scores * scores).item() - std::pow(mean(scores).item(), 2));
  return {{"score_std", spread}, {"max_probability", mean(max(p, {-1})).item()},
          {"jacobian_norm", mean_jacobian_norm(p)}};
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  Generator gen(7);
  nlohmann::json rows;
  for (int64_t d : {8, 64, 512}) {
    const Tensor q = Tensor::randn({kTrials, 1, d}, gen, DType::f64);
    const Tensor k = Tensor::randn({kTrials, kKeys, d}, gen, DType::f64);
    const Tensor scores = matmul(q, k, false, true);  // (trials, 1, keys)
    rows.push_back({{"d_k", d},
                    {"unscaled", statistics(scores)},
                    {"scaled", statistics(scores / std::sqrt(static_cast<double>(d)))}});
  }
  if (json) {
    fmt::print("{}\n", nlohmann::json{{"keys", kKeys}, {"trials", kTrials}, {"rows", rows}}.dump(2));
    return 0;
  }
  fmt::print("over {} keys, {} random queries each: the scores' standard deviation, the mean max "
             "softmax probability and the mean ||softmax Jacobian||_F\n", kKeys, kTrials);
  fmt::print("{:>6} | {:>10} {:>10} {:>10} | {:>10} {:>10} {:>10}\n", "", "unscaled", "", "", "scaled", "", "");
  fmt::print("{:>6} | {:>10} {:>10} {:>10} | {:>10} {:>10} {:>10}\n", "d_k", "std", "max p", "|J|", "std",
             "max p", "|J|");
  for (const nlohmann::json& r : rows) {
    fmt::print("{:>6}", r["d_k"].get<int64_t>());
    for (const char* scaling : {"unscaled", "scaled"}) {
      const nlohmann::json& s = r[scaling];
      fmt::print(" | {:>10.4f} {:>10.4f} {:>10.4f}", s["score_std"].get<double>(),
                 s["max_probability"].get<double>(), s["jacobian_norm"].get<double>());
    }
    fmt::print("\n");
  }
  fmt::print("(uniform attention would be {:.4f})\n", 1.0 / kKeys);
}
