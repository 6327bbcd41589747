#include "attention_input.hpp"

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::plot {

void check_positions(const char* fn, int seq_len, const std::vector<std::string>& labels,
                     int max_seq_len) {
  if (seq_len < 1 || seq_len > max_seq_len) {
    throw ValueError(Operation(fn),
        fmt::format("seq_len must be in [1, {}], got {}", max_seq_len, seq_len));
  }
  if (labels.size() != static_cast<std::size_t>(seq_len)) {
    throw ShapeError(Operation(fn), fmt::format("{} labels for seq_len {}; need one per position",
                                 labels.size(), seq_len));
  }
}

void check_weights(const char* fn, const float* weights) {
  if (weights == nullptr) throw ValueError(Operation(fn), "weights is null");
}

}  // namespace tinygpt::plot
