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

}  // namespace tinygpt
