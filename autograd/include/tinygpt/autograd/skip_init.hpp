#pragma once
// Building a model without its random initial values, for one whose every parameter a file sets.

namespace tinygpt {

// While alive, Tensor::randn and Tensor::uniform draw nothing and return uninitialised tensors
// (as PyTorch's skip_init): a model built to be loaded need not draw, and touch, a random value
// per weight first. Per thread, like NoGradGuard.
class SkipInitGuard {
 public:
  SkipInitGuard();
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;

 private:
  bool previous_;
};

// True while a SkipInitGuard is alive on this thread.
bool init_skipped();

}  // namespace tinygpt
