#pragma once
// Shape: the dimensions of a tensor, stored inline (no heap allocation per op).
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tinygpt {

class Shape {
 public:
  static constexpr int kMaxDims = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int64_t ndim() const { return ndim_; }
  int64_t numel() const;
  int64_t operator[](int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int64_t i) { return dims_[static_cast<size_t>(i)]; }
  // Dimension `axis`, where negative axes count from the end; throws ShapeError when out of range.
  int64_t dim(int64_t axis) const;
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + ndim_; }

  void push_back(int64_t d);
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }
  // Row-major strides in elements: the last axis has stride 1.
  Shape strides() const;
  std::string str() const;  // "(2, 3, 4)"

  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::array<int64_t, kMaxDims> dims_{};
  int64_t ndim_ = 0;
};

// Maps a possibly negative axis into [0, ndim); throws ShapeError naming `op` and the shape.
int64_t normalize_axis(int64_t axis, const Shape& shape, const char* op);

}  // namespace tinygpt

template <>
struct fmt::formatter<tinygpt::Shape> : fmt::formatter<std::string> {
  template <class Ctx>
  auto format(const tinygpt::Shape& s, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(s.str(), ctx);
  }
};
