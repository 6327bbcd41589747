#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "tinygpt/heads/head_scores.hpp"

using namespace tinygpt::heads;

namespace {

// Causal patterns, T x T row-major, each row summing to 1 over keys 0..i.
using Pattern = std::vector<float>;

template <class Row>
Pattern make_pattern(int64_t t, Row row) {  // row(i, j) = weight before normalisation
  Pattern a(static_cast<size_t>(t * t), 0.0f);
  for (int64_t i = 0; i < t; ++i) {
    double total = 0.0;
    for (int64_t j = 0; j <= i; ++j) total += row(i, j);
    for (int64_t j = 0; j <= i; ++j) a[static_cast<size_t>(i * t + j)] = static_cast<float>(row(i, j) / total);
  }
  return a;
}

Pattern previous_token(int64_t t) {
  return make_pattern(t, [](int64_t i, int64_t j) { return (i == 0 || j == i - 1) ? 1.0 : 0.0; });
}
Pattern uniform(int64_t t) {
  return make_pattern(t, [](int64_t, int64_t) { return 1.0; });
}
// On a sequence of period p repeated twice: the second copy attends to i - p + offset.
Pattern shifted_back(int64_t t, int64_t p, int64_t offset) {
  return make_pattern(t, [&](int64_t i, int64_t j) {
    if (i < p) return j == i ? 1.0 : 0.0;
    return j == i - p + offset ? 1.0 : 0.0;
  });
}

}  // namespace

TEST_CASE("head scores: a pure previous-token pattern scores 1 on previous_token only", "[heads]") {
  const Pattern a = previous_token(10);
  CHECK(previous_token_score(a.data(), 10) == Approx(1.0));
  CHECK(current_token_score(a.data(), 10) == Approx(0.0));
  CHECK(first_token_score(a.data(), 10) == Approx(1.0 / 9.0));  // only query 1's previous is 0
  CHECK(local_score(a.data(), 10, 4) == Approx(1.0));
  CHECK(normalized_entropy(a.data(), 10) == Approx(0.0).margin(1e-9));
}

TEST_CASE("head scores: uniform causal attention scores the mean of 1/(i+1)", "[heads]") {
  const int64_t t = 8;
  const Pattern a = uniform(t);
  double mean_inverse = 0.0;
  for (int64_t i = 1; i < t; ++i) mean_inverse += 1.0 / static_cast<double>(i + 1);
  mean_inverse /= static_cast<double>(t - 1);
  CHECK(previous_token_score(a.data(), t) == Approx(mean_inverse));
  CHECK(current_token_score(a.data(), t) == Approx(mean_inverse));
  CHECK(first_token_score(a.data(), t) == Approx(mean_inverse));
  CHECK(normalized_entropy(a.data(), t) == Approx(1.0));
  double local = 0.0;  // queries 4..7 see 5 of their i+1 keys
  for (int64_t i = 4; i < t; ++i) local += 5.0 / static_cast<double>(i + 1);
  CHECK(local_score(a.data(), t, 4) == Approx(local / 4.0));
}

TEST_CASE("head scores: induction and duplicate-token patterns on a repeated sequence", "[heads]") {
  const int64_t p = 6, t = 12;
  const Pattern induction = shifted_back(t, p, 1);
  CHECK(induction_score(induction.data(), t, p) == Approx(1.0));
  CHECK(duplicate_token_score(induction.data(), t, p) == Approx(0.0));
  const Pattern duplicate = shifted_back(t, p, 0);
  CHECK(duplicate_token_score(duplicate.data(), t, p) == Approx(1.0));
  CHECK(induction_score(duplicate.data(), t, p) == Approx(0.0));
  // A previous-token head is neither.
  const Pattern prev = previous_token(t);
  CHECK(induction_score(prev.data(), t, p) == Approx(0.0));
}

TEST_CASE("head scores: an attention sink scores 1 on first_token", "[heads]") {
  const Pattern sink = make_pattern(9, [](int64_t, int64_t j) { return j == 0 ? 1.0 : 0.0; });
  CHECK(first_token_score(sink.data(), 9) == Approx(1.0));
  CHECK(previous_token_score(sink.data(), 9) == Approx(1.0 / 8.0));  // query 1's previous is 0
}

TEST_CASE("head roles follow the documented rule", "[heads]") {
  HeadScores prev;
  prev.previous_token = 0.9;
  prev.local = 1.0;
  assign_role(prev);
  CHECK(prev.role == "previous-token");
  CHECK(prev.role_score == Approx(0.9));

  HeadScores induction;
  induction.induction = 0.7;
  induction.previous_token = 0.2;
  assign_role(induction);
  CHECK(induction.role == "induction");

  HeadScores local;
  local.previous_token = 0.3;
  local.local = 0.8;
  assign_role(local);
  CHECK(local.role == "local");

  HeadScores diffuse;
  diffuse.entropy = 0.9;
  assign_role(diffuse);
  CHECK(diffuse.role == "diffuse");

  HeadScores mixed;
  mixed.entropy = 0.3;
  mixed.local = 0.5;
  assign_role(mixed);
  CHECK(mixed.role == "mixed");
}
