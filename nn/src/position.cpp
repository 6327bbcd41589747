#include "tinygpt/nn/position.hpp"

#include <cmath>

#include "tinygpt/autograd/dispatch.hpp"

namespace tinygpt::nn {

namespace {
constexpr const char* kNames[] = {"learned", "sinusoidal", "rope", "alibi", "none"};
}

std::string position_embedding_name(PositionEmbedding p) { return kNames[static_cast<int>(p)]; }

PositionEmbedding parse_position_embedding(const std::string& name) {
  for (int i = 0; i < 5; ++i) {
    if (name == kNames[i]) return static_cast<PositionEmbedding>(i);
  }
  throw ValueError(fmt::format(
      "unknown position embedding '{}' (expected learned, sinusoidal, rope, alibi or none)", name));
}

Tensor sinusoidal_positions(int64_t offset, int64_t length, int64_t dim, DType dtype) {
  if (offset < 0 || length < 0 || dim <= 0) {
    throw ValueError(Operation("sinusoidal_positions"), fmt::format("bad offset {}, length {} or dim {}",
                                 offset, length, dim));
  }
  Tensor table = Tensor::empty({length, dim}, dtype);  // (T,C)
  dispatch_float(dtype, "sinusoidal_positions", [&](auto tag) {
    using T = decltype(tag);
    T* pe = table.data<T>();
    for (int64_t i = 0; 2 * i < dim; ++i) {
      const double inv_freq = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
      for (int64_t p = 0; p < length; ++p) {
        const double angle = static_cast<double>(offset + p) * inv_freq;
        pe[p * dim + 2 * i] = static_cast<T>(std::sin(angle));
        if (2 * i + 1 < dim) pe[p * dim + 2 * i + 1] = static_cast<T>(std::cos(angle));
      }
    }
  });
  return table;
}

}  // namespace tinygpt::nn
