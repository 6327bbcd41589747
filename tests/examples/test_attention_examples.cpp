// examples/attention_walkthrough and examples/attention_scaling: every number they print, text
// and --json, against values this test computes on its own (plain loops over the texts' matrices,
// not the library's attention).
#include <cmath>
#include <numeric>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/run_cli.hpp"
#include "tinygpt/autograd/tensor.hpp"

using namespace tinygpt::testing;
using nlohmann::json;
using Matrix = std::vector<std::vector<double>>;

namespace {

std::string run_example(const std::string& name, const std::vector<std::string>& args) {
  CliOptions options;
  options.program = std::string(TINYGPT_BINARY_DIR "/examples/") + name;
  const CliResult r = run_cli(args, options);
  INFO(r.describe());
  REQUIRE(r.exited_with(0));
  return r.out;
}

// Every number printed with four decimals, in order.
std::vector<double> printed_numbers(const std::string& text) {
  std::vector<double> numbers;
  const std::regex number(R"(-?\d+\.\d{4}\b)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
    numbers.push_back(std::stod(it->str()));
  }
  return numbers;
}

void check_printed(const std::string& text, const std::vector<double>& expected) {
  const std::vector<double> printed = printed_numbers(text);
  REQUIRE(printed.size() == expected.size());
  for (size_t i = 0; i < printed.size(); ++i) {
    INFO("number " << i << ": printed " << printed[i] << ", expected " << expected[i]);
    CHECK(std::abs(printed[i] - expected[i]) <= 0.5e-4 + 1e-6);
  }
}

void check_close(const json& got, const Matrix& expected) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    REQUIRE(got[i].size() == expected[i].size());
    for (size_t j = 0; j < expected[i].size(); ++j) CHECK(got[i][j].get<double>() == Approx(expected[i][j]).margin(1e-6));
  }
}

void append(std::vector<double>& numbers, const Matrix& m) {
  for (const auto& row : m) numbers.insert(numbers.end(), row.begin(), row.end());
}

Matrix rows(const std::vector<double>& values, size_t columns) {
  Matrix m;
  for (size_t i = 0; i < values.size(); i += columns) m.emplace_back(values.begin() + i, values.begin() + i + columns);
  return m;
}

const Matrix kQ = rows({1, 0, 1, 0, 0, 2, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1}, 4);
const Matrix kK = rows({0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0.5, 0.5}, 4);
const Matrix kV = rows({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0.5, 0.5, 0.5, 0.5}, 4);

// One attention run as the walkthrough prints it: each head's weights, their average, the heads'
// outputs concatenated. Head h reads dims [first(h), first(h) + d_head); scores scaled by `scale`.
struct Reference {
  std::vector<Matrix> heads;
  Matrix average, output;
};

Reference attend(const Matrix& q, const Matrix& k, const Matrix& v, int64_t heads, bool causal,
                 bool same_subspace, double scale_times_sqrt = 1.0) {
  const size_t t = q.size(), width = q[0].size(), d_head = width / static_cast<size_t>(heads);
  Reference r;
  r.average.assign(t, std::vector<double>(t, 0.0));
  r.output.assign(t, std::vector<double>(width, 0.0));
  for (size_t h = 0; h < static_cast<size_t>(heads); ++h) {
    const size_t first = same_subspace ? 0 : h * d_head;
    Matrix w(t, std::vector<double>(t, 0.0));
    for (size_t i = 0; i < t; ++i) {
      double total = 0.0;
      for (size_t j = 0; j < t && (!causal || j <= i); ++j) {
        double dot = 0.0;
        for (size_t d = first; d < first + d_head; ++d) dot += q[i][d] * k[j][d];
        w[i][j] = std::exp(dot * scale_times_sqrt / std::sqrt(static_cast<double>(d_head)));
        total += w[i][j];
      }
      for (size_t j = 0; j < t; ++j) {
        w[i][j] /= total;
        r.average[i][j] += w[i][j] / static_cast<double>(heads);
        for (size_t d = 0; d < d_head; ++d) r.output[i][h * d_head + d] += w[i][j] * v[j][first + d];
      }
    }
    r.heads.push_back(w);
  }
  return r;
}

void append(std::vector<double>& numbers, const Reference& r) {
  for (const Matrix& w : r.heads) append(numbers, w);
  append(numbers, r.average);
  append(numbers, r.output);
}

void check_json(const json& got, const Reference& r) {
  REQUIRE(got["heads"].size() == r.heads.size());
  for (size_t h = 0; h < r.heads.size(); ++h) check_close(got["heads"][h], r.heads[h]);
  check_close(got["average"], r.average);
  check_close(got["output"], r.output);
}

Matrix transposed(const Matrix& m) {
  Matrix out(m[0].size(), std::vector<double>(m.size()));
  for (size_t i = 0; i < m.size(); ++i) {
    for (size_t j = 0; j < m[i].size(); ++j) out[j][i] = m[i][j];
  }
  return out;
}

// Row i of a against column j of b, as dot products of a's rows with b^T's.
Matrix product(const Matrix& a, const Matrix& b) {
  const Matrix columns = transposed(b);
  Matrix out;
  for (const auto& row : a) {
    out.emplace_back();
    for (const auto& column : columns) out.back().push_back(std::inner_product(row.begin(), row.end(), column.begin(), 0.0));
  }
  return out;
}

// The l2 norm of head h's block of `output`: what pruning it changes, under any orthogonal W^O.
double block_norm(const Matrix& output, size_t h, size_t d_head) {
  double sum = 0.0;
  for (const auto& row : output) {
    for (size_t d = h * d_head; d < (h + 1) * d_head; ++d) sum += row[d] * row[d];
  }
  return std::sqrt(sum);
}

}  // namespace

TEST_CASE("attention_walkthrough prints the texts' worked examples, every number checked",
          "[examples][walkthrough]") {
  for (const int64_t heads : {1, 2, 4}) {
    INFO("--heads " << heads);
    const json out = json::parse(run_example("attention_walkthrough", {"--heads", std::to_string(heads), "--json"}));
    const size_t d_head = 4 / static_cast<size_t>(heads);
    const Reference unmasked = attend(kQ, kK, kV, heads, false, false);
    const Reference causal = attend(kQ, kK, kV, heads, true, false);
    const Reference same = attend(kQ, kK, kV, heads, false, true);
    check_json(out["unmasked"], unmasked);
    check_json(out["causal"], causal);
    check_json(out["same_subspace"], same);
    for (size_t h = 1; h < same.heads.size(); ++h) CHECK(same.heads[h] == same.heads[0]);  // one head's work, repeated
    std::vector<double> expected;
    append(expected, unmasked);
    append(expected, causal);
    append(expected, same);

    // W^O: the identity, the permutation moving each head's block one head on, a random orthogonal.
    REQUIRE(out["projections"].size() == 3);
    for (const json& p : out["projections"]) {
      const Matrix w = p["w_o"].get<Matrix>();
      const Matrix gram = product(w, transposed(w));
      for (size_t i = 0; i < 4; ++i) {
        for (size_t j = 0; j < 4; ++j) {
          CHECK(gram[i][j] == Approx(i == j ? 1.0 : 0.0).margin(1e-12));
          if (p["name"] == "random orthogonal") continue;
          const bool one = p["name"] == "identity" ? i == j : j == (i + d_head) % 4;
          CHECK(w[i][j] == (one ? 1.0 : 0.0));
        }
      }
      const Matrix projected = product(unmasked.output, w);
      check_close(p["output"], projected);
      append(expected, w);
      append(expected, projected);
      for (size_t h = 0; h < static_cast<size_t>(heads); ++h) {
        CHECK(p["prune_l2"][h].get<double>() == Approx(block_norm(unmasked.output, h, d_head)).margin(1e-6));
        expected.push_back(block_norm(unmasked.output, h, d_head));
      }
    }
    CHECK(out["projections"][0]["name"] == "identity");
    CHECK(out["projections"][1]["name"] == "permutation");

    const Matrix x = rows({1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1}, 4);
    const Reference three = attend(x, x, x, 1, false, false);
    check_json(out["three_tokens"], three);
    const Reference unscaled = attend(x, x, x, 1, false, false, 2.0);
    check_close(out["three_tokens"]["unscaled"], unscaled.average);
    append(expected, three);
    append(expected, unscaled.average);
    check_printed(run_example("attention_walkthrough", {"--heads", std::to_string(heads)}), expected);
  }
  // The three-token weights, worked by hand: scores X X^T / 2 = [[1,0,1],[0,1,1],[1,1,2]].
  const json three = json::parse(run_example("attention_walkthrough", {"--json"}))["three_tokens"];
  CHECK(three["average"][0][0].get<double>() == Approx(std::exp(1.0) / (2 * std::exp(1.0) + 1)).margin(1e-6));
  CHECK(three["average"][2][2].get<double>() == Approx(std::exp(2.0) / (std::exp(2.0) + 2 * std::exp(1.0))).margin(1e-6));
  CHECK(run_example("attention_walkthrough", {}) == run_example("attention_walkthrough", {"--heads", "2"}));
}

TEST_CASE("attention_walkthrough refuses a head count it does not split 4 dims into", "[examples][walkthrough]") {
  CliOptions options;
  options.program = TINYGPT_BINARY_DIR "/examples/attention_walkthrough";
  for (const std::string bad : {"3", "0", "8"}) CHECK(run_cli({"--heads", bad}, options).exited_with(2));
}

namespace {

// Mean over `trials` rows of scores (keys each): std of all scores, max probability, ||J||_F.
std::vector<double> scaling_row(const std::vector<double>& scores, size_t keys) {
  double total = 0.0, squares = 0.0, max_p = 0.0, jacobian = 0.0;
  const size_t trials = scores.size() / keys;
  for (size_t r = 0; r < trials; ++r) {
    std::vector<double> p(keys);
    double z = 0.0;
    for (size_t j = 0; j < keys; ++j) z += (p[j] = std::exp(scores[r * keys + j]));
    double row_max = 0.0, norm = 0.0;
    for (size_t j = 0; j < keys; ++j) {
      p[j] /= z;
      row_max = std::max(row_max, p[j]);
    }
    for (size_t i = 0; i < keys; ++i) {
      for (size_t j = 0; j < keys; ++j) {
        const double entry = (i == j ? p[i] : 0.0) - p[i] * p[j];
        norm += entry * entry;
      }
    }
    max_p += row_max / static_cast<double>(trials);
    jacobian += std::sqrt(norm) / static_cast<double>(trials);
  }
  for (const double s : scores) {
    total += s;
    squares += s * s;
  }
  const double n = static_cast<double>(scores.size());
  return {std::sqrt(squares / n - (total / n) * (total / n)), max_p, jacobian};
}

}  // namespace

TEST_CASE("attention_scaling prints the scores' spread, max probability and Jacobian size, every number checked",
          "[examples][scaling]") {
  constexpr size_t kKeys = 16, kTrials = 200;
  tinygpt::Generator gen(7);  // the example's draws, in its order
  std::vector<double> expected;
  const json out = json::parse(run_example("attention_scaling", {"--json"}));
  REQUIRE(out["rows"].size() == 3);
  size_t row = 0;
  for (const int64_t d : {8, 64, 512}) {
    const tinygpt::Tensor q = tinygpt::Tensor::randn({kTrials, 1, d}, gen, tinygpt::DType::f64);
    const tinygpt::Tensor k = tinygpt::Tensor::randn({kTrials, kKeys, d}, gen, tinygpt::DType::f64);
    std::vector<double> unscaled, scaled;
    for (int64_t r = 0; r < static_cast<int64_t>(kTrials); ++r) {
      for (int64_t j = 0; j < static_cast<int64_t>(kKeys); ++j) {
        double dot = 0.0;
        for (int64_t c = 0; c < d; ++c) dot += q.at({r, 0, c}) * k.at({r, j, c});
        unscaled.push_back(dot);
        scaled.push_back(dot / std::sqrt(static_cast<double>(d)));
      }
    }
    const json& got = out["rows"][row++];
    CHECK(got["d_k"] == d);
    for (const auto& [name, scores] : {std::pair<const char*, const std::vector<double>&>{"unscaled", unscaled},
                                       {"scaled", scaled}}) {
      const std::vector<double> want = scaling_row(scores, kKeys);
      CHECK(got[name]["score_std"].get<double>() == Approx(want[0]).epsilon(1e-9));
      CHECK(got[name]["max_probability"].get<double>() == Approx(want[1]).epsilon(1e-9));
      CHECK(got[name]["jacobian_norm"].get<double>() == Approx(want[2]).epsilon(1e-9));
      expected.insert(expected.end(), want.begin(), want.end());
    }
    // Unscaled scores spread as sqrt(d_k); scaled ones stay near 1, their softmax far from saturated.
    CHECK(std::abs(got["unscaled"]["score_std"].get<double>() / std::sqrt(static_cast<double>(d)) - 1.0) < 0.1);
    CHECK(std::abs(got["scaled"]["score_std"].get<double>() - 1.0) < 0.1);
  }
  CHECK(out["rows"][2]["unscaled"]["max_probability"].get<double>() > 0.9);
  CHECK(out["rows"][2]["unscaled"]["jacobian_norm"].get<double>() < out["rows"][2]["scaled"]["jacobian_norm"].get<double>());
  expected.push_back(1.0 / kKeys);
  check_printed(run_example("attention_scaling", {}), expected);
}
