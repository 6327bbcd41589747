#include "tinygpt/autograd/threads.hpp"

#include <omp.h>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

extern "C" void openblas_set_num_threads(int num_threads);

namespace tinygpt {
namespace {
int g_threads = 0;
bool g_flush_denormals = false;

#if defined(__SSE__)
constexpr unsigned kFlushBits = 0x8040;  // MXCSR's FTZ (bit 15) and DAZ (bit 6)

void apply_flush_denormals(bool on) {
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? (csr | kFlushBits) : (csr & ~kFlushBits));
}
#endif

// On the calling thread and each of the team's (MXCSR is per thread; libgomp may have started
// them before the setting).
void apply_to_team() {
#if defined(__SSE__)
  const bool on = g_flush_denormals;
  apply_flush_denormals(on);
#pragma omp parallel num_threads(num_threads())
  apply_flush_denormals(on);
#endif
}

}  // namespace

int omp_num_threads_from_env() {
  const char* text = std::getenv("OMP_NUM_THREADS");
  if (text == nullptr) return 0;
  const std::string value(text);
  const std::string first = value.substr(0, value.find(','));
  const size_t begin = first.find_first_not_of(" \t"), end = first.find_last_not_of(" \t");
  if (begin == std::string::npos) return 0;
  const std::string digits = first.substr(begin, end - begin + 1);
  if (digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoi(digits);  // 0 when the count is 0, which libgomp refuses as well
}

void set_num_threads(int n) {
  if (n <= 0) n = omp_num_threads_from_env();
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  g_threads = n;
  omp_set_num_threads(n);
  // OpenBLAS only ever runs inside one OpenMP thread: matmul splits its work across the OpenMP
  // team itself (ops/batched_product.cpp), so a second pool of BLAS threads would only fight it.
  openblas_set_num_threads(1);
  if (g_flush_denormals) apply_to_team();  // and to the threads a larger team adds
}

int num_threads() { return g_threads > 0 ? g_threads : omp_get_max_threads(); }

void set_flush_denormals(bool on) {
#if defined(__SSE__)
  g_flush_denormals = on;
  apply_to_team();
#else
  (void)on;
#endif
}

bool flush_denormals() { return g_flush_denormals; }

}  // namespace tinygpt
