#include <algorithm>
#include <functional>
#include <numeric>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/shape.hpp"

namespace tinygpt {

Shape::Shape(std::initializer_list<int64_t> dims) {
  if (dims.size() > kMaxDims) {
    throw ShapeError(fmt::format("Shape: at most {} dims, got {}", kMaxDims, dims.size()));
  }
  for (int64_t d : dims) push_back(d);
}

Shape::Shape(const std::vector<int64_t>& dims) {
  if (dims.size() > kMaxDims) {
    throw ShapeError(fmt::format("Shape: at most {} dims, got {}", kMaxDims, dims.size()));
  }
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t d) {
  if (ndim_ == kMaxDims) throw ShapeError(fmt::format("Shape: at most {} dims", kMaxDims));
  if (d < 0) throw ShapeError(fmt::format("Shape: negative dimension {}", d));
  dims_[static_cast<size_t>(ndim_++)] = d;
}

int64_t Shape::numel() const {
  return std::accumulate(begin(), end(), int64_t{1}, std::multiplies<>());
}

int64_t Shape::dim(int64_t axis) const { return (*this)[normalize_axis(axis, *this, "dim")]; }

Shape Shape::strides() const {
  Shape s = *this;
  int64_t stride = 1;
  for (int64_t i = ndim_ - 1; i >= 0; --i) {
    s[i] = stride;
    stride *= (*this)[i];
  }
  return s;
}

std::string Shape::str() const {
  if (ndim_ == 1) return fmt::format("({},)", dims_[0]);
  return fmt::format("({})", fmt::join(begin(), end(), ", "));
}

bool operator==(const Shape& a, const Shape& b) {
  return a.ndim_ == b.ndim_ && std::equal(a.begin(), a.end(), b.begin());
}

int64_t normalize_axis(int64_t axis, const Shape& shape, const char* op) {
  const int64_t n = shape.ndim();
  if (axis < -n || axis >= n) {
    throw ShapeError(fmt::format("{}: axis {} is out of range for a tensor of shape {}", op, axis,
                                 shape.str()));
  }
  return axis < 0 ? axis + n : axis;
}

}  // namespace tinygpt
