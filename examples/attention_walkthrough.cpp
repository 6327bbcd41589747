// The classic five-token attention example, run through the library's own attention code:
// "The cat sat on mat", d_model 4, two heads with no learned projections (head 1 reads dims 0-1,
// head 2 dims 2-3). Prints each head's weights, their average and the concatenated output,
// without and with a causal mask. `--json` prints the same numbers as JSON.
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/nn/attention.hpp"

using namespace tinygpt;

namespace {

const std::vector<std::string> kTokens = {"The", "cat", "sat", "on", "mat"};
constexpr int64_t kT = 5, kModel = 4, kHeads = 2, kHeadDim = kModel / kHeads;

// (T, d_model) rows -> (1, H, T, d_head): head h reads dims [h*d_head, (h+1)*d_head).
Tensor split_heads(const std::vector<double>& rows) {
  return permute(reshape(Tensor::from(rows, {kT, kModel}), {1, kT, kHeads, kHeadDim}), {0, 2, 1, 3});
}

std::vector<std::vector<double>> rows_of(const Tensor& m) {  // (R, C) -> nested vectors
  std::vector<std::vector<double>> out(static_cast<size_t>(m.size(0)));
  for (int64_t i = 0; i < m.size(0); ++i) {
    for (int64_t j = 0; j < m.size(1); ++j) out[static_cast<size_t>(i)].push_back(m.at({i, j}));
  }
  return out;
}

void print_matrix(const std::string& title, const std::vector<std::vector<double>>& m,
                  const std::vector<std::string>& columns) {
  fmt::print("{}\n{:>6}", title, "");
  for (const auto& c : columns) fmt::print("{:>9}", c);
  fmt::print("\n");
  for (size_t i = 0; i < m.size(); ++i) {
    fmt::print("{:>6}", kTokens[i]);
    for (double v : m[i]) fmt::print("{:>9.4f}", v);
    fmt::print("\n");
  }
  fmt::print("\n");
}

nlohmann::json run(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  const auto [output, weights] = nn::scaled_dot_product_attention(q, k, v, mask);
  nlohmann::json result;
  for (int64_t h = 0; h < kHeads; ++h) {
    result["heads"].push_back(rows_of(reshape(narrow(weights, 1, h, 1), {kT, kT})));
  }
  result["average"] = rows_of(reshape(mean(weights, {1}), {kT, kT}));
  result["output"] = rows_of(reshape(permute(output, {0, 2, 1, 3}), {kT, kModel}));  // heads concatenated
  return result;
}

void print(const std::string& heading, const nlohmann::json& r) {
  fmt::print("=== {} ===\n\n", heading);
  for (int64_t h = 0; h < kHeads; ++h) {
    print_matrix(fmt::format("head {} attention weights (rows: queries, columns: keys)", h + 1),
                 r["heads"][static_cast<size_t>(h)], kTokens);
  }
  print_matrix("head-averaged weights", r["average"], kTokens);
  print_matrix("output (head 1 | head 2 concatenated)", r["output"], {"d0", "d1", "d2", "d3"});
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  const Tensor q = split_heads({1, 0, 1, 0, 0, 2, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1});
  const Tensor k = split_heads({0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0.5, 0.5});
  const Tensor v = split_heads({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0.5, 0.5, 0.5, 0.5});
  const nlohmann::json result = {{"tokens", kTokens},
                                 {"unmasked", run(q, k, v, Tensor{})},
                                 {"causal", run(q, k, v, nn::causal_mask(kT, kT))}};
  if (json) {
    fmt::print("{}\n", result.dump(2));
  } else {
    print("no mask", result["unmasked"]);
    print("causal mask (each token sees itself and what came before)", result["causal"]);
  }
}
