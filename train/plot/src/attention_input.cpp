#include "attention_input.hpp"

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::plot {

void check_positions(const char* fn, int seq_len, const std::vector<std::string>& labels,
                     int max_seq_len) {
  if (seq_len < 1 || seq_len > max_seq_len) {
    throw ValueError(
        fmt::format("{}: seq_len must be in [1, {}], got {}", fn, max_seq_len, seq_len));
  }
  if (labels.size() != static_cast<std::size_t>(seq_len)) {
    throw ShapeError(fmt::format("{}: {} labels for seq_len {}; need one per position", fn,
                                 labels.size(), seq_len));
  }
}

void check_weights(const char* fn, const float* weights) {
  if (weights == nullptr) throw ValueError(fmt::format("{}: weights is null", fn));
}

}  // namespace tinygpt::plot
