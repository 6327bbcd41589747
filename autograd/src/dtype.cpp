#include "tinygpt/autograd/dtype.hpp"

namespace tinygpt {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i64:
      return "i64";
  }
  return "?";
}

int64_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 8; }

bool is_floating(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

}  // namespace tinygpt
