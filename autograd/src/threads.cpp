#include "tinygpt/autograd/threads.hpp"

#include <omp.h>

#include <algorithm>
#include <thread>

extern "C" void openblas_set_num_threads(int num_threads);

namespace tinygpt {
namespace {
int g_threads = 0;
}

void set_num_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  g_threads = n;
  omp_set_num_threads(n);
  // OpenBLAS only ever runs inside one OpenMP thread: matmul splits its work across the OpenMP
  // team itself (ops/matmul.cpp), so a second pool of BLAS threads would only fight it.
  openblas_set_num_threads(1);
}

int num_threads() { return g_threads > 0 ? g_threads : omp_get_max_threads(); }

}  // namespace tinygpt
