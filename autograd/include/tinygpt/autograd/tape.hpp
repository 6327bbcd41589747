#pragma once
// The reverse-mode tape. An op computes its output, then calls record() with the function that
// maps the output's gradient to its inputs' gradients; that function sits right beside the
// forward code of the op (see autograd/src/ops/*.cpp, or examples/custom_op.cpp for an op
// defined outside the library).
#include <functional>
#include <vector>

#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt {

// Gradient of the op's output -> one gradient per input, each of that input's shape and dtype.
// An entry may be left undefined (Tensor{}) for an input that needs no gradient.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

// Makes `output` a node of the graph with `inputs` as its parents. Does nothing (and drops
// `backward`) when grad mode is off or no input requires grad. The backward function must not
// capture `output` itself (that would be a cycle): capture output.detach() instead.
Tensor record(const char* op, Tensor output, std::vector<Tensor> inputs, BackwardFn backward);

// True unless a NoGradGuard is alive on this thread.
bool grad_enabled();

// While alive, ops record nothing (as torch.no_grad()). Backward runs under one.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace tinygpt
