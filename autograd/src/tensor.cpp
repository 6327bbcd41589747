#include "tinygpt/autograd/tensor.hpp"

#include <cmath>
#include <cstring>

#include "tinygpt/autograd/dispatch.hpp"
#include "tensor_impl.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/skip_init.hpp"

namespace tinygpt {
namespace detail {

Storage::Storage(DType dtype, int64_t numel) {
  const std::array<size_t, 1> shape{static_cast<size_t>(numel)};
  switch (dtype) {
    case DType::f32:
      data = std::get<Buffer<float>>(buffer = Buffer<float>(shape)).data();
      break;
    case DType::f64:
      data = std::get<Buffer<double>>(buffer = Buffer<double>(shape)).data();
      break;
    case DType::i64:
      data = std::get<Buffer<int64_t>>(buffer = Buffer<int64_t>(shape)).data();
      break;
  }
}

std::shared_ptr<TensorImpl> make_impl(const Shape& shape, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = dtype;
  impl->storage = std::make_shared<Storage>(dtype, shape.numel());
  return impl;
}

}  // namespace detail


detail::TensorImpl& Tensor::checked() const {
  if (!impl_) throw ValueError("use of an undefined Tensor (default-constructed or empty grad)");
  return *impl_;
}

// ---- Creation ----

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  return Tensor(detail::make_impl(shape, dtype));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  t.fill_(value);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor Tensor::scalar(double value, DType dtype) { return full(Shape{}, value, dtype); }

Tensor Tensor::from(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (static_cast<int64_t>(values.size()) != shape.numel()) {
    throw ShapeError(fmt::format("Tensor::from: {} values do not fill shape {} ({} elements)",
                                 values.size(), shape.str(), shape.numel()));
  }
  Tensor t = empty(shape, dtype);
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}

Tensor Tensor::from_ids(const std::vector<int64_t>& ids, const Shape& shape) {
  if (static_cast<int64_t>(ids.size()) != shape.numel()) {
    throw ShapeError(fmt::format("Tensor::from_ids: {} ids do not fill shape {}", ids.size(),
                                 shape.str()));
  }
  Tensor t = empty(shape, DType::i64);
  std::copy(ids.begin(), ids.end(), t.data<int64_t>());
  return t;
}

Tensor Tensor::arange(int64_t n, DType dtype) {
  Tensor t = empty(Shape{n}, dtype);
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(i);
  });
  return t;
}

namespace {
thread_local bool g_init_skipped = false;

// A new tensor whose elements are draw() in row-major order (none under a SkipInitGuard).
template <class Draw>
Tensor random_tensor(const Shape& shape, DType dtype, const char* op, Draw draw) {
  Tensor t = Tensor::empty(shape, dtype);
  dispatch_float(dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if (g_init_skipped) return;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(draw());
  });
  return t;
}
}  // namespace

SkipInitGuard::SkipInitGuard() : previous_(g_init_skipped) { g_init_skipped = true; }
SkipInitGuard::~SkipInitGuard() { g_init_skipped = previous_; }
bool init_skipped() { return g_init_skipped; }

Tensor Tensor::randn(const Shape& shape, Generator& gen, DType dtype, double mean, double std) {
  return random_tensor(shape, dtype, "Tensor::randn", [&] { return mean + std * gen.normal(); });
}

Tensor Tensor::uniform(const Shape& shape, Generator& gen, double low, double high, DType dtype) {
  return random_tensor(shape, dtype, "Tensor::uniform",
                       [&] { return low + (high - low) * gen.uniform(); });
}

// ---- Queries ----

const Shape& Tensor::shape() const { return checked().shape; }
DType Tensor::dtype() const { return checked().dtype; }
int64_t Tensor::size(int64_t axis) const { return shape().dim(axis); }

template <class T>
T* Tensor::data() {
  auto& impl = checked();
  if (impl.dtype != dtype_of<T>()) {
    throw ValueError(fmt::format("Tensor::data: tensor of shape {} holds {}, not {}",
                                 impl.shape.str(), dtype_name(impl.dtype),
                                 dtype_name(dtype_of<T>())));
  }
  return static_cast<T*>(impl.storage->data);
}

template <class T>
const T* Tensor::data() const {
  return const_cast<Tensor*>(this)->data<T>();
}

template float* Tensor::data<float>();
template double* Tensor::data<double>();
template int64_t* Tensor::data<int64_t>();
template const float* Tensor::data<float>() const;
template const double* Tensor::data<double>() const;
template const int64_t* Tensor::data<int64_t>() const;

namespace {
double element(const Tensor& t, int64_t flat) {
  return dispatch_all(t.dtype(),
                      [&](auto tag) { return static_cast<double>(t.data<decltype(tag)>()[flat]); });
}
}  // namespace

double Tensor::item() const {
  if (numel() != 1) {
    throw ShapeError(fmt::format("Tensor::item: needs exactly one element, shape is {}",
                                 shape().str()));
  }
  return element(*this, 0);
}

double Tensor::at(std::initializer_list<int64_t> index) const {
  const Shape& s = shape();
  if (static_cast<int64_t>(index.size()) != s.ndim()) {
    throw IndexError(fmt::format("Tensor::at: {} indices for a tensor of shape {}", index.size(),
                                 s.str()));
  }
  int64_t flat = 0, axis = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= s[axis]) {
      throw IndexError(fmt::format("Tensor::at: index {} is out of range for axis {} of shape {}",
                                   i, axis, s.str()));
    }
    flat = flat * s[axis] + i;
    ++axis;
  }
  return element(*this, flat);
}

std::vector<double> Tensor::to_vector() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = element(*this, i);
  return out;
}

std::string Tensor::str() const {
  if (!impl_) return "tensor(undefined)";
  const Shape& s = shape();
  const bool is_int = dtype() == DType::i64;
  std::string out = "tensor(";
  // Prints axis `axis` starting at flat offset `offset`; long axes show their ends only.
  auto print = [&](auto&& self, int64_t axis, int64_t offset, int64_t stride) -> void {
    if (axis == s.ndim()) {
      const double v = element(*this, offset);
      out += is_int ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{:.4f}", v);
      return;
    }
    const int64_t n = s[axis], inner = stride / std::max<int64_t>(n, 1);
    out += '[';
    for (int64_t i = 0; i < n; ++i) {
      if (n > 8 && i == 3) {
        out += "..., ";
        i = n - 3;
      }
      self(self, axis + 1, offset + i * inner, inner);
      if (i + 1 < n) out += axis + 1 == s.ndim() ? ", " : ",\n" + std::string(8 + axis, ' ');
    }
    out += ']';
  };
  print(print, 0, 0, s.numel());
  out += fmt::format(", shape={}, dtype={}", s.str(), dtype_name(dtype()));
  if (impl_->grad_fn) out += fmt::format(", grad_fn={}", impl_->grad_fn->op);
  return out + ")";
}

// ---- Autograd state ----

bool Tensor::requires_grad() const { return checked().requires_grad; }

Tensor& Tensor::set_requires_grad(bool requires) {
  auto& impl = checked();
  if (impl.grad_fn) {
    throw GraphError(fmt::format(
        "set_requires_grad: only leaves can be marked; this tensor of shape {} comes from '{}'",
        impl.shape.str(), impl.grad_fn->op));
  }
  if (requires && !is_floating(impl.dtype)) {
    throw ValueError(fmt::format("set_requires_grad: {} tensors cannot require grad",
                                 dtype_name(impl.dtype)));
  }
  impl.requires_grad = requires;
  return *this;
}

bool Tensor::is_leaf() const { return checked().grad_fn == nullptr; }

const Tensor& Tensor::grad() const { return checked().grad; }

void Tensor::zero_grad() { checked().grad = Tensor(); }

void Tensor::set_grad(const Tensor& grad) {
  auto& impl = checked();
  if (grad.defined() && (grad.shape() != impl.shape || grad.dtype() != impl.dtype)) {
    throw ShapeError(fmt::format("set_grad: gradient {} {} does not match tensor {} {}",
                                 grad.shape().str(), dtype_name(grad.dtype()), impl.shape.str(),
                                 dtype_name(impl.dtype)));
  }
  impl.grad = grad;
}

Tensor Tensor::detach() const {
  auto& impl = checked();
  auto out = std::make_shared<detail::TensorImpl>();
  out->shape = impl.shape;
  out->dtype = impl.dtype;
  out->storage = impl.storage;
  return Tensor(std::move(out));
}

const char* Tensor::grad_fn_name() const {
  auto& impl = checked();
  return impl.grad_fn ? impl.grad_fn->op : "";
}

// ---- Copies ----

Tensor Tensor::clone() const { return to(dtype()); }

Tensor Tensor::to(DType dtype) const {
  Tensor out = empty(shape(), dtype);
  out.copy_(*this);
  return out;
}

void Tensor::copy_(const Tensor& src) {
  if (src.shape() != shape()) {
    throw ShapeError(fmt::format("copy_: source shape {} differs from destination shape {}",
                                 src.shape().str(), shape().str()));
  }
  // An empty tensor may have no buffer at all (null data), and a tensor sharing src's storage
  // already holds its values: memcpy must see neither.
  if (numel() == 0 || src.impl_->storage == checked().storage) return;
  if (src.dtype() == dtype()) {
    std::memcpy(checked().storage->data, src.impl_->storage->data,
                static_cast<size_t>(numel() * dtype_size(dtype())));
    return;
  }
  dispatch_all(dtype(), [&](auto dst_tag) {
    using D = decltype(dst_tag);
    D* d = data<D>();
    dispatch_all(src.dtype(), [&](auto src_tag) {
      const auto* s = src.data<decltype(src_tag)>();
      for (int64_t i = 0; i < numel(); ++i) d[i] = static_cast<D>(s[i]);
    });
  });
}

void Tensor::set_data(const Tensor& src) {
  auto& impl = checked();
  if (impl.grad_fn) {
    throw GraphError(fmt::format("set_data: only leaves can be repointed; this tensor of shape {} "
                                 "comes from '{}'",
                                 impl.shape.str(), impl.grad_fn->op));
  }
  impl.shape = src.shape();
  impl.dtype = src.dtype();
  impl.storage = src.impl()->storage;
  impl.grad = Tensor();
}

void Tensor::fill_(double value) {
  dispatch_all(dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(data<T>(), numel(), static_cast<T>(value));
  });
}

}  // namespace tinygpt
