#pragma once
// Loops built a second time for AVX-512 inside a build that is not (gelu_kernels.cpp,
// attention_products.cpp). The project builds with -mno-avx512f because GCC 12.2 miscompiles
// AVX-512 constant vectors (CMakeLists.txt); these loops hold no such constants, and their tests
// compare them with the build's own code.
//
// Only in a build that has FMA itself (-march=native here): GCC contracts a * b + c into one FMA
// wherever the target has it, so an AVX-512 loop in a build without FMA (the sanitizer build)
// would round differently from the rest of that build.
#if defined(__FMA__)
// 512-bit vectors wanted in these loops: GCC spells it as a target feature, clang (the fuzz
// build) as an attribute of its own and ignores a target string holding GCC's spelling.
#if defined(__clang__)
#define TINYGPT_AVX512_TARGET(features) \
  __attribute__((target(features), min_vector_width(512)))
#else
#define TINYGPT_AVX512_TARGET(features) \
  __attribute__((target(features ",prefer-vector-width=512")))
#endif
#define TINYGPT_AVX512 TINYGPT_AVX512_TARGET("avx512f,avx512vl,avx512bw,avx512dq")
// The same with the bf16 pair products (vdpbf16ps) of the fused attention's bf16 tiles.
#define TINYGPT_AVX512_BF16 TINYGPT_AVX512_TARGET("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16")
#define TINYGPT_HAS_AVX512_CLONES 1
#else
#define TINYGPT_AVX512
#define TINYGPT_AVX512_BF16
#define TINYGPT_HAS_AVX512_CLONES 0
#endif

namespace tinygpt::kernels {

// True when this build made the AVX-512 clones and the CPU can run them.
bool use_avx512();

// use_avx512() on a CPU that also has avx512_bf16.
bool use_avx512_bf16();

}  // namespace tinygpt::kernels
