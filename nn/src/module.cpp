#include "tinygpt/nn/module.hpp"

#include <unordered_map>
#include <unordered_set>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::nn {

void Module::check_new_name(const std::string& name, const char* op) const {
  for (const NamedTensors* kind : {&params_, &buffers_}) {
    for (const auto& [existing, _] : *kind) {
      if (existing == name) throw ValueError(Operation(op), fmt::format("'{}' twice", name));
    }
  }
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  check_new_name(name, "register_parameter");
  value.set_requires_grad(true);
  params_.emplace_back(name, value);
  return value;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name, "register_buffer");
  buffers_.emplace_back(name, value);
  return value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  if (!module) throw ValueError(Operation("register_module"), fmt::format("'{}' is null", name));
  for (const auto& [existing, _] : children_) {
    if (existing == name) throw ValueError(Operation("register_module"), fmt::format("'{}' twice", name));
  }
  module->train(training_);
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, NamedTensors Module::*kind,
                     NamedTensors& out) const {
  for (const auto& [name, p] : this->*kind) out.emplace_back(prefix + name, p);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", kind, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", &Module::params_, out);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", &Module::buffers_, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, p] : named_parameters()) out.push_back(p);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (Tensor p : parameters()) p.zero_grad();
}

void Module::to(DType dtype) {
  for (auto& [_, p] : state_dict()) {
    if (p.dtype() != dtype) p.set_data(p.to(dtype));
  }
}

NamedTensors Module::state_dict() const {
  NamedTensors out = named_parameters();
  for (auto& named : named_buffers()) out.push_back(std::move(named));
  return out;
}

std::unordered_map<std::string, Tensor> Module::checked_own_tensors(const NamedTensors& state) const {
  std::unordered_map<std::string, Tensor> own;
  for (auto& [name, p] : state_dict()) own.emplace(name, p);
  std::unordered_set<std::string> seen;
  for (const auto& [name, t] : state) {
    auto it = own.find(name);
    if (it == own.end()) {
      throw ValueError(Operation("load_state_dict"), fmt::format("unexpected tensor '{}' of shape {}", name,
                                   t.shape().str()));
    }
    if (it->second.shape() != t.shape()) {
      throw ShapeError(Operation("load_state_dict"), fmt::format("'{}' has shape {} but the model expects {}",
                                   name, t.shape().str(), it->second.shape().str()));
    }
    // Floats convert between precisions; integers in place of a float weight are not weights.
    if (is_floating(it->second.dtype()) && !is_floating(t.dtype())) {
      throw ValueError(Operation("load_state_dict"), fmt::format("tensor '{}' holds integers ({}), but the "
                                   "model's weight is {}", name, dtype_name(t.dtype()),
                                   dtype_name(it->second.dtype())));
    }
    seen.insert(name);
  }
  for (const auto& [name, p] : own) {
    if (!seen.count(name)) {
      throw ValueError(Operation("load_state_dict"), fmt::format("missing tensor '{}' of shape {}", name,
                                   p.shape().str()));
    }
  }
  return own;
}

void Module::load_state_dict(const NamedTensors& state) {
  std::unordered_map<std::string, Tensor> own = checked_own_tensors(state);
  for (const auto& [name, t] : state) own.at(name).copy_(t);
}

void Module::take_state_dict(const NamedTensors& state) {
  std::unordered_map<std::string, Tensor> own = checked_own_tensors(state);
  for (const auto& [name, t] : state) {
    Tensor& p = own.at(name);
    if (p.dtype() == t.dtype()) {
      p.set_data(t);
    } else {
      p.copy_(t);
    }
  }
}

}  // namespace tinygpt::nn
