#pragma once
// What one attention head does, scored on its (T x T) attention pattern A (rows = queries,
// causal: A[i][j] = 0 for j > i), in the spirit of TransformerLens's head detectors: each score
// is the share of attention mass a query puts on the role's target position, averaged over the
// queries where the role is defined. All scores are in [0, 1].
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace tinygpt::heads {

// Mass on position i-1, over queries i >= 1.
double previous_token_score(const float* a, int64_t t);
// Mass on position i itself, over queries i >= 1 (query 0 can only attend to itself).
double current_token_score(const float* a, int64_t t);
// Mass on position 0 (the "attention sink"), over queries i >= 1.
double first_token_score(const float* a, int64_t t);
// Mass on the `window` + 1 most recent positions [i-window, i], over queries i >= window (where
// the window does not already cover every key).
double local_score(const float* a, int64_t t, int64_t window);
// Row entropy divided by its maximum log(i+1), over queries i >= 1: 0 = one key, 1 = uniform.
double normalized_entropy(const float* a, int64_t t);
// On a random sequence of length `period` repeated twice (t = 2 * period): mass from each query
// i of the second copy on i - period + 1, the token after the previous occurrence of token i.
double induction_score(const float* a, int64_t t, int64_t period);
// Same probe: mass on i - period, the previous occurrence of the current token.
double duplicate_token_score(const float* a, int64_t t, int64_t period);

struct HeadScores {
  int64_t layer = 0;
  int64_t head = 0;
  double previous_token = 0.0;
  double induction = 0.0;
  double duplicate_token = 0.0;
  double first_token = 0.0;
  double current_token = 0.0;
  double local = 0.0;
  double entropy = 0.0;
  std::string role;         // dominant role, or "diffuse" / "mixed"
  double role_score = 0.0;  // the score that earned the role (entropy for "diffuse")
};

// The role rule (documented in the README): the largest of previous_token, induction,
// duplicate_token, first_token and current_token names the role if it is at least
// kRoleThreshold; otherwise "local" if local >= kLocalThreshold; otherwise "diffuse" when the
// entropy is at least kDiffuseEntropy, else "mixed".
constexpr double kRoleThreshold = 0.4;
constexpr double kLocalThreshold = 0.6;
constexpr double kDiffuseEntropy = 0.6;
void assign_role(HeadScores& scores);

// The same rule over any candidate roles (name, score): an encoder-decoder's heads have others.
// `spread` names the role of a head whose attention is spread out (an encoder's is "broad").
struct Role {
  std::string name;
  double score = 0.0;
};
Role pick_role(std::initializer_list<std::pair<const char*, double>> candidates, double local,
               double entropy, const char* spread = "diffuse");

}  // namespace tinygpt::heads
