#pragma once
// Element types. Training runs in f32; gradient checks run the same code in f64.
// i64 holds token ids and targets: ops that differentiate reject it.
#include <cstdint>

namespace tinygpt {

enum class DType { f32, f64, i64 };

const char* dtype_name(DType dtype);
int64_t dtype_size(DType dtype);
bool is_floating(DType dtype);

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::f32; }
template <>
constexpr DType dtype_of<double>() { return DType::f64; }
template <>
constexpr DType dtype_of<int64_t>() { return DType::i64; }

}  // namespace tinygpt
