#pragma once
// Sets the OpenMP team size for one scope and restores it after (CTest runs every test with
// OMP_NUM_THREADS=1, so tests that compare thread counts set them explicitly).
#include "tinygpt/autograd/threads.hpp"

namespace tinygpt::testing {

class ThreadsScope {
 public:
  explicit ThreadsScope(int n) : previous_(num_threads()) { set_num_threads(n); }
  ~ThreadsScope() { set_num_threads(previous_); }
  ThreadsScope(const ThreadsScope&) = delete;
  ThreadsScope& operator=(const ThreadsScope&) = delete;

 private:
  int previous_;
};

}  // namespace tinygpt::testing
