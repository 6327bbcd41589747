#pragma once
// Catch2 glue for gradcheck: REQUIRE_GRADCHECK(fn, inputs) fails with the worst element.
#include <catch2/catch.hpp>

#include "tinygpt/autograd.hpp"

namespace tinygpt::testing {

// Random f64 leaf that requires grad.
inline Tensor leaf(const Shape& shape, uint64_t seed, double scale = 1.0) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, DType::f64, 0.0, scale).set_requires_grad();
}

}  // namespace tinygpt::testing

#define REQUIRE_GRADCHECK(fn, ...)                                    \
  do {                                                                \
    const auto gc_result_ = ::tinygpt::gradcheck((fn), __VA_ARGS__);  \
    INFO(gc_result_.message());                                       \
    REQUIRE(gc_result_.checked > 0);                                  \
    REQUIRE(gc_result_.ok);                                           \
  } while (0)
