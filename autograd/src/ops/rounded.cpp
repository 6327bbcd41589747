#include "rounded.hpp"

#include "common.hpp"

namespace tinygpt::detail {

Rounded Rounded::room(int64_t count, bf16*& out) {
  Rounded r;
  r.storage = Tensor::empty({(count + 1) / 2}, DType::f32);  // two bf16 per f32 slot
  out = reinterpret_cast<bf16*>(r.storage.data<float>());
  r.data = out;
  return r;
}

namespace {

// `count` values, rows of `ld`, rounded or widened (convert_bf16) row by row on the OpenMP team.
template <class From, class To>
void convert_rows(const From* x, int64_t count, int64_t ld, To* out) {
  const int64_t rows = count / ld;
  for_range(count > kParallelGrain, rows, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row)
      kernels::convert_bf16(x + row * ld, 1, ld, ld, out + row * ld);
  });
}

}  // namespace

Rounded round_rows(const float* x, int64_t count, int64_t ld) {
  bf16* out = nullptr;
  Rounded r = Rounded::room(count, out);
  convert_rows(x, count, ld, out);
  return r;
}

template <class From>
Tensor widened_rows(const From* x, int64_t count, int64_t ld) {
  Tensor out = Tensor::empty({count}, DType::f32);
  convert_rows(x, count, ld, out.data<float>());
  return out;
}

template Tensor widened_rows(const bf16* x, int64_t count, int64_t ld);
template Tensor widened_rows(const float* x, int64_t count, int64_t ld);

Rounded rounded(const Tensor& x) {
  return round_rows(x.data<float>(), x.numel(), x.shape()[x.ndim() - 1]);
}

}  // namespace tinygpt::detail
