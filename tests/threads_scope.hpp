#pragma once
// Sets a thread setting for one scope and restores it after: the OpenMP team size (CTest runs
// every test with OMP_NUM_THREADS=1, so tests that compare thread counts set them explicitly) or
// the flushing of subnormal floats.
#include "tinygpt/autograd/threads.hpp"

namespace tinygpt::testing {

template <class T, T (*Get)(), void (*Set)(T)>
class SettingScope {
 public:
  explicit SettingScope(T value) : previous_(Get()) { Set(value); }
  ~SettingScope() { Set(previous_); }
  SettingScope(const SettingScope&) = delete;
  SettingScope& operator=(const SettingScope&) = delete;

 private:
  T previous_;
};

using ThreadsScope = SettingScope<int, num_threads, set_num_threads>;
using FlushDenormalsScope = SettingScope<bool, flush_denormals, set_flush_denormals>;

}  // namespace tinygpt::testing
