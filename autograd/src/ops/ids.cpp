// Validation of integer ids (token ids, targets) shared by embedding and cross_entropy. It runs
// before the kernels, which may then index without checks.
#include "common.hpp"

namespace tinygpt::detail {

int64_t first_bad_id(const Tensor& ids, int64_t limit, const char* op,
                     std::optional<int64_t> skip) {
  if (ids.dtype() != DType::i64) {
    throw ValueError(fmt::format("{}: ids must be i64, got {} of shape {}", op,
                                 dtype_name(ids.dtype()), ids.shape().str()));
  }
  const int64_t* p = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if ((p[i] < 0 || p[i] >= limit) && p[i] != skip) return i;
  }
  return -1;
}

std::string index_str(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(static_cast<size_t>(shape.ndim()));
  for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
    index[static_cast<size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  return fmt::format("({})", fmt::join(index, ", "));
}

}  // namespace tinygpt::detail
