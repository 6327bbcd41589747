#pragma once
// The check that keeps a NaN or an infinity out of a checkpoint and out of a loaded model.
#include <optional>
#include <string>

#include "tinygpt/nn/module.hpp"

namespace tinygpt::train {

struct NonFinite {
  std::string name;  // the tensor's
  double value;
};

// The first NaN or infinity among the f32 and f64 `tensors`, named by its tensor; none: nullopt.
std::optional<NonFinite> first_non_finite(const nn::NamedTensors& tensors);

}  // namespace tinygpt::train
