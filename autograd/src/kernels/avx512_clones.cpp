#include "avx512_clones.hpp"

namespace tinygpt::kernels {

bool use_avx512() {
  static const bool use = TINYGPT_HAS_AVX512_CLONES && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  return use;
}

bool use_avx512_bf16() {
  static const bool use = use_avx512() && __builtin_cpu_supports("avx512bf16");
  return use;
}

}  // namespace tinygpt::kernels
