#pragma once
// What a Tensor handle points to, and the graph node an op records. Private to the library.
#include <memory>
#include <variant>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "caching_allocator.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::detail {

// A flat, contiguous, 64-byte aligned xtensor container from the caching allocator.
template <class T>
using Buffer = xt::xtensor<T, 1, xt::layout_type::row_major, CachingAllocator<T>>;

struct Storage {
  std::variant<Buffer<float>, Buffer<double>, Buffer<int64_t>> buffer;
  void* data = nullptr;

  Storage(DType dtype, int64_t numel);
};

struct TensorImpl {
  Shape shape;
  DType dtype = DType::f32;
  std::shared_ptr<Storage> storage;  // shared by reshape and detach
  bool requires_grad = false;
  Tensor grad;                       // leaves only
  std::shared_ptr<Node> grad_fn;     // the op that produced this tensor; null for leaves
};

// One recorded op. Holds the backward function (and the buffers it captured) until the graph is
// released, and one edge per input: the node that produced it, or the leaf it is.
struct Node {
  struct Edge {
    std::shared_ptr<Node> node;
    std::shared_ptr<TensorImpl> leaf;
    Shape shape;
    DType dtype = DType::f32;
    bool active() const { return node || leaf; }
  };

  const char* op = "";
  std::vector<Edge> edges;
  BackwardFn backward;
  bool released = false;

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();  // iterative: see tape.cpp
};

std::shared_ptr<TensorImpl> make_impl(const Shape& shape, DType dtype);

}  // namespace tinygpt::detail
