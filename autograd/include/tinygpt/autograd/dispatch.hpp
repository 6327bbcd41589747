#pragma once
// Run-time dtype -> compile-time element type, for kernels (the library's and users' custom
// ops) written as templates over T and called as
//   dispatch_float(x.dtype(), "op", [&](auto tag) { using T = decltype(tag); ... });
#include <utility>

#include <fmt/format.h>

#include "tinygpt/autograd/dtype.hpp"
#include "tinygpt/autograd/error.hpp"

namespace tinygpt {

template <class F>
decltype(auto) dispatch_float(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    default:
      throw ValueError(fmt::format("{}: needs a floating-point tensor (f32 or f64), got {}", op,
                                   dtype_name(dtype)));
  }
}

template <class F>
decltype(auto) dispatch_all(DType dtype, F&& f) {
  if (dtype == DType::i64) return f(int64_t{});
  return dispatch_float(dtype, "dispatch_all", std::forward<F>(f));
}

}  // namespace tinygpt
