#pragma once
// Helpers shared by the autograd test files: leaves with values in a chosen range, exact-valued
// tensors, and a check that a call throws the right exception with a message naming the op and
// the shapes.
#include <cstdint>
#include <cstring>
#include <vector>

#include "gradcheck_helpers.hpp"

namespace tinygpt::testing {

using Inputs = std::vector<Tensor>;
using Catch::Matchers::Contains;

// f64 leaf uniform in [low, high): positive inputs for log/sqrt, denominators away from 0.
inline Tensor uniform_leaf(const Shape& shape, uint64_t seed, double low, double high) {
  Generator gen(seed);
  return Tensor::uniform(shape, gen, low, high, DType::f64).set_requires_grad();
}

// f64 leaf whose elements have magnitude in [0.2, 1.2) and a random sign, so kinks at 0 (relu,
// the finite differences of max) are never within eps.
inline Tensor away_from_zero_leaf(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  Tensor t = Tensor::empty(shape, DType::f64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double magnitude = 0.2 + gen.uniform();
    p[i] = gen.uniform() < 0.5 ? -magnitude : magnitude;
  }
  return t.set_requires_grad();
}

// Exact f64 values, not requiring grad.
inline Tensor f64(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from(values, shape, DType::f64);
}

// x as f32, rounded to bfloat16 (nearest even).
inline double bf16_of(double x) {
  const float f = static_cast<float>(x);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

}  // namespace tinygpt::testing

// `expr` throws `Type`, and its message matches `matcher` (Contains(op) && Contains(shape)...).
// expr runs once per check, so it must build any graph that its failure consumes.
#define REQUIRE_THROWS_NAMING(expr, Type, matcher) \
  do {                                             \
    REQUIRE_THROWS_AS(expr, Type);                 \
    REQUIRE_THROWS_WITH(expr, matcher);            \
  } while (0)
