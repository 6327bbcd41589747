#pragma once
// Tensor: an n-dimensional, contiguous, row-major array that can take part in the autograd tape.
//
// A Tensor is a cheap handle (shared ownership) to its data, like torch::Tensor. Every tensor an
// op returns is contiguous; reshape shares the data of its input, every other op writes a new
// buffer. The element type is chosen at run time (f32 for training, f64 for gradient checks,
// i64 for token ids), so one model class serves both precisions.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tinygpt/autograd/dtype.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/shape.hpp"

namespace tinygpt {

namespace detail {
struct TensorImpl;
struct Node;
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;  // undefined: holds no data
  bool defined() const { return impl_ != nullptr; }

  // ---- Creation ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32);  // uninitialised
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32);
  static Tensor ones(const Shape& shape, DType dtype = DType::f32);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32);
  static Tensor scalar(double value, DType dtype = DType::f32);
  // Row-major values; values.size() must equal shape.numel().
  static Tensor from(const std::vector<double>& values, const Shape& shape,
                     DType dtype = DType::f32);
  static Tensor from_ids(const std::vector<int64_t>& ids, const Shape& shape);
  static Tensor arange(int64_t n, DType dtype = DType::f32);  // 0, 1, ..., n-1
  static Tensor randn(const Shape& shape, Generator& gen, DType dtype = DType::f32,
                      double mean = 0.0, double std = 1.0);
  static Tensor uniform(const Shape& shape, Generator& gen, double low, double high,
                        DType dtype = DType::f32);

  // ---- Queries ----
  const Shape& shape() const;
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t ndim() const { return shape().ndim(); }
  int64_t numel() const { return shape().numel(); }
  DType dtype() const;

  // Contiguous row-major elements; throws ValueError if T does not match dtype().
  template <class T>
  T* data();
  template <class T>
  const T* data() const;

  // Inspection (converted to double). item() needs exactly one element.
  double item() const;
  double at(std::initializer_list<int64_t> index) const;
  std::vector<double> to_vector() const;
  std::string str() const;

  // ---- Autograd ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool requires = true);  // leaves only
  bool is_leaf() const;
  // Gradient accumulated by backward() into a leaf; undefined before the first backward.
  const Tensor& grad() const;
  void zero_grad();  // drops the accumulated gradient
  void set_grad(const Tensor& grad);
  // Back-propagates from this scalar. The graph's saved buffers are released afterwards
  // unless retain_graph is true; a second backward through a released graph throws GraphError.
  void backward(bool retain_graph = false) const;
  // Back-propagates with an explicit upstream gradient of this tensor's shape.
  void backward(const Tensor& grad, bool retain_graph = false) const;
  // Same data, cut from the graph: a leaf that does not require grad.
  Tensor detach() const;
  // Name of the op that produced this tensor ("" for leaves).
  const char* grad_fn_name() const;

  // ---- Copies and in-place updates (never recorded: for optimisers and initialisation) ----
  Tensor clone() const;            // deep copy, detached
  Tensor to(DType dtype) const;    // converted copy, detached
  void copy_(const Tensor& src);   // same shape; converts dtype
  void fill_(double value);
  // Points this leaf at `src`'s data, shape and dtype (as PyTorch's set_data): every handle to
  // this tensor sees the change. Lets a module convert or replace its parameters in place.
  void set_data(const Tensor& src);

  // Internal: the implementation handle, for the tape and the ops.
  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

 private:
  detail::TensorImpl& checked() const;
  std::shared_ptr<detail::TensorImpl> impl_;
};

}  // namespace tinygpt

template <>
struct fmt::formatter<tinygpt::Tensor> : fmt::formatter<std::string> {
  template <class Ctx>
  auto format(const tinygpt::Tensor& t, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(t.str(), ctx);
  }
};
