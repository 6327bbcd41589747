#pragma once
// Which library and kernel run the matrix products of a dtype, for reports (bench, train
// --verbose): f32 on oneDNN (kernel: the instruction set it dispatched to on this CPU), f64 on
// OpenBLAS (kernel: the core type it chose, e.g. from $OPENBLAS_CORETYPE).
#include <string>

#include "tinygpt/autograd/dtype.hpp"

namespace tinygpt {

struct GemmBackend {
  std::string library;  // e.g. "oneDNN 2.6.3", "OpenBLAS"
  std::string kernel;   // e.g. "avx512_core_bf16", "Haswell"
};

GemmBackend gemm_backend(DType dtype);

// The instructions the project's own loops (the fused attention, GELU, layer norm, the one-row
// products, ...) run on: what the build compiled them for (CMakeLists.txt falls back from
// -march=native where GCC miscompiles it), then the AVX-512 kernels built beside them when this
// CPU runs them, e.g. "avx2+fma, avx512_bf16 kernels" or "x86-64 baseline".
std::string own_loops_isa();

}  // namespace tinygpt
