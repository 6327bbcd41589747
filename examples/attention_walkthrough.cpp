// The classic five-token attention example, run through the library's own attention code:
// "The cat sat on mat", d_model 4, heads with no learned projections (with `--heads 2`, the
// default, head 1 reads dims 0-1 and head 2 dims 2-3; `--heads 1` one head reads all four,
// `--heads 4` each head one dim). Prints each head's weights, their average and the concatenated
// output, without and with a causal mask; then the texts' exercises on the unmasked run: every
// head reading the same subspace, an output projection W^O (identity, permutation, random
// orthogonal), pruning each head in turn with the output's l2 change, and a three-token example.
// `--json` prints the same numbers as JSON.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/nn/attention.hpp"

using namespace tinygpt;

namespace {

using Matrix = std::vector<std::vector<double>>;

const std::vector<std::string> kTokens = {"The", "cat", "sat", "on", "mat"};
constexpr int64_t kT = 5, kModel = 4;
const std::vector<double> kQ = {1, 0, 1, 0, 0, 2, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1};
const std::vector<double> kK = {0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0.5, 0.5};
const std::vector<double> kV = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0.5, 0.5, 0.5, 0.5};

// (T, d_model) rows -> (1, H, T, d_model / H): head h reads dims [h*d_head, (h+1)*d_head).
Tensor split_heads(const std::vector<double>& rows, int64_t heads) {
  const int64_t t = static_cast<int64_t>(rows.size()) / kModel;
  return permute(reshape(Tensor::from(rows, {t, kModel}), {1, t, heads, kModel / heads}), {0, 2, 1, 3});
}

// (T, d_model) rows -> (1, H, T, d_model / H) where every head reads the first head's dims.
Tensor same_subspace(const std::vector<double>& rows, int64_t heads) {
  const Tensor first = narrow(split_heads(rows, heads), 1, 0, 1);
  return concat(std::vector<Tensor>(static_cast<size_t>(heads), first), 1);
}

Matrix rows_of(const Tensor& m) {  // (R, C) -> nested vectors
  Matrix out(static_cast<size_t>(m.size(0)));
  for (int64_t i = 0; i < m.size(0); ++i) {
    for (int64_t j = 0; j < m.size(1); ++j) out[static_cast<size_t>(i)].push_back(m.at({i, j}));
  }
  return out;
}

Matrix product(const Matrix& a, const Matrix& b) {
  Matrix out(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < b[0].size(); ++j) {
      for (size_t k = 0; k < b.size(); ++k) out[i][j] += a[i][k] * b[k][j];
    }
  }
  return out;
}

double l2_distance(const Matrix& a, const Matrix& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) sum += (a[i][j] - b[i][j]) * (a[i][j] - b[i][j]);
  }
  return std::sqrt(sum);
}

nlohmann::json run(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  const auto [output, weights] = nn::scaled_dot_product_attention(q, k, v, mask);
  const int64_t heads = q.size(1), t = q.size(2);
  nlohmann::json result;
  for (int64_t h = 0; h < heads; ++h) {
    result["heads"].push_back(rows_of(reshape(narrow(weights, 1, h, 1), {t, t})));
  }
  result["average"] = rows_of(reshape(mean(weights, {1}), {t, t}));
  result["output"] = rows_of(reshape(permute(output, {0, 2, 1, 3}), {t, kModel}));  // heads concatenated
  return result;
}

// W^O matrices that keep lengths: the identity, a permutation moving each head's block to the
// next head's place, and a random orthogonal one (Gram-Schmidt on seeded Gaussian columns).
nlohmann::json output_projections(int64_t heads) {
  Matrix identity(kModel, std::vector<double>(kModel, 0.0)), permutation = identity;
  const int64_t d_head = kModel / heads;
  for (int64_t i = 0; i < kModel; ++i) {
    identity[static_cast<size_t>(i)][static_cast<size_t>(i)] = 1.0;
    permutation[static_cast<size_t>(i)][static_cast<size_t>((i + d_head) % kModel)] = 1.0;
  }
  Generator gen(62);
  Matrix random = rows_of(Tensor::randn({kModel, kModel}, gen, DType::f64));
  for (size_t j = 0; j < kModel; ++j) {  // orthonormalise column j against the columns before it
    for (size_t p = 0; p < j; ++p) {
      double dot = 0.0;
      for (size_t i = 0; i < kModel; ++i) dot += random[i][j] * random[i][p];
      for (size_t i = 0; i < kModel; ++i) random[i][j] -= dot * random[i][p];
    }
    double norm = 0.0;
    for (size_t i = 0; i < kModel; ++i) norm += random[i][j] * random[i][j];
    for (size_t i = 0; i < kModel; ++i) random[i][j] /= std::sqrt(norm);
  }
  return {{"identity", identity}, {"permutation", permutation}, {"random orthogonal", random}};
}

// Each W^O applied to the concatenated output, and the l2 change of the projected output when
// one head's block is zeroed (the head pruned), under each W^O.
nlohmann::json exercises(const Matrix& concatenated, int64_t heads) {
  nlohmann::json result;
  const int64_t d_head = kModel / heads;
  const nlohmann::json projections = output_projections(heads);
  for (const auto& item : projections.items()) {
    const Matrix w = item.value();
    const Matrix projected = product(concatenated, w);
    nlohmann::json entry = {{"name", item.key()}, {"w_o", w}, {"output", projected}};
    for (int64_t h = 0; h < heads; ++h) {
      Matrix pruned = concatenated;
      for (auto& row : pruned) {
        for (int64_t d = h * d_head; d < (h + 1) * d_head; ++d) row[static_cast<size_t>(d)] = 0.0;
      }
      entry["prune_l2"].push_back(l2_distance(projected, product(pruned, w)));
    }
    result.push_back(entry);
  }
  return result;
}

// A three-token example with Q = K = V = X and one head of width 4, scaled by 1/sqrt(4).
nlohmann::json three_tokens() {
  const std::vector<double> x = {1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1};
  const Tensor t = split_heads(x, 1);
  nlohmann::json result = run(t, t, t, Tensor{});
  result["tokens"] = {"I", "love", "cats"};
  result["unscaled"] = run(t * 2.0, t, t, Tensor{})["average"];  // 2 = sqrt(4) cancels the scale
  return result;
}

void print_matrix(const std::string& title, const Matrix& m, const std::vector<std::string>& rows,
                  const std::vector<std::string>& columns) {
  fmt::print("{}\n{:>6}", title, "");
  for (const auto& c : columns) fmt::print("{:>9}", c);
  fmt::print("\n");
  for (size_t i = 0; i < m.size(); ++i) {
    fmt::print("{:>6}", rows[i]);
    for (double v : m[i]) fmt::print("{:>9.4f}", v);
    fmt::print("\n");
  }
  fmt::print("\n");
}

const std::vector<std::string> kDims = {"d0", "d1", "d2", "d3"};

std::string heads_named(int64_t heads) {
  std::string names = "head 1";
  for (int64_t h = 2; h <= heads; ++h) names += fmt::format(" | head {}", h);
  return names;
}

void print(const std::string& heading, const nlohmann::json& r, const std::vector<std::string>& tokens) {
  fmt::print("=== {} ===\n\n", heading);
  const int64_t heads = static_cast<int64_t>(r["heads"].size());
  for (int64_t h = 0; h < heads; ++h) {
    print_matrix(fmt::format("head {} attention weights (rows: queries, columns: keys)", h + 1),
                 r["heads"][static_cast<size_t>(h)], tokens, tokens);
  }
  print_matrix("head-averaged weights", r["average"], tokens, tokens);
  print_matrix(fmt::format("output ({} concatenated)", heads_named(heads)), r["output"], tokens, kDims);
}

void print_exercises(const nlohmann::json& result) {
  fmt::print("=== output projection W^O and pruning one head (no mask) ===\n\n");
  for (const nlohmann::json& e : result["projections"]) {
    const std::string name = e["name"];
    print_matrix("W^O: " + name, e["w_o"], kDims, kDims);
    print_matrix("output x W^O (" + name + ")", e["output"], kTokens, kDims);
    fmt::print("l2 change of output x W^O ({}) when one head is pruned:", name);
    for (size_t h = 0; h < e["prune_l2"].size(); ++h) fmt::print("  head {} {:.4f}", h + 1, e["prune_l2"][h].get<double>());
    fmt::print("\n\n");
  }
  const nlohmann::json& three = result["three_tokens"];
  print("three tokens, Q = K = V = X, one head of width 4", three, three["tokens"]);
  print_matrix("the same weights without the 1/sqrt(d_k) scale", three["unscaled"], three["tokens"], three["tokens"]);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int64_t heads = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--heads" && i + 1 < argc && (std::strcmp(argv[i + 1], "1") == 0 ||
                                                    std::strcmp(argv[i + 1], "2") == 0 ||
                                                    std::strcmp(argv[i + 1], "4") == 0)) {
      heads = std::stoll(argv[++i]);
    } else {
      fmt::print(stderr, "usage: attention_walkthrough [--heads 1|2|4] [--json]\n");
      return 2;
    }
  }
  const Tensor q = split_heads(kQ, heads), k = split_heads(kK, heads), v = split_heads(kV, heads);
  nlohmann::json result = {{"tokens", kTokens},
                           {"heads", heads},
                           {"unmasked", run(q, k, v, Tensor{})},
                           {"causal", run(q, k, v, nn::causal_mask(kT, kT))},
                           {"same_subspace", run(same_subspace(kQ, heads), same_subspace(kK, heads),
                                                 same_subspace(kV, heads), Tensor{})},
                           {"three_tokens", three_tokens()}};
  result["projections"] = exercises(result["unmasked"]["output"], heads);
  if (json) {
    fmt::print("{}\n", result.dump(2));
    return 0;
  }
  print("no mask", result["unmasked"], kTokens);
  print("causal mask (each token sees itself and what came before)", result["causal"], kTokens);
  print("identical subspaces: every head reads head 1's dims (no mask)", result["same_subspace"], kTokens);
  print_exercises(result);
}
