#pragma once
// Module: the base of every layer, in the spirit of PyTorch's C++ frontend. A module registers
// its parameters and submodules by name; the hierarchical names ("transformer.h.0.attn.c_attn.
// weight") are what state dicts and checkpoints use.
//
//   struct Scale : tinygpt::nn::Module {
//     Tensor gain;
//     explicit Scale(int64_t n) { gain = register_parameter("gain", Tensor::ones({n})); }
//     Tensor forward(const Tensor& x) { return x * gain; }
//   };
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Parameters of this module and its submodules, depth first in registration order.
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }
  int64_t num_parameters() const;

  // Training mode (dropout active) propagates to every submodule.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();
  // Converts every parameter and buffer to `dtype` in place (f64 for gradient checks).
  void to(DType dtype);

  // Tensors a module keeps beside its parameters, saved with them but not trained (Performer's
  // random features), depth first in registration order.
  NamedTensors named_buffers() const;
  // name -> tensor (the parameters, then the buffers, themselves, not copies).
  NamedTensors state_dict() const;
  // Copies each tensor into the parameter of that name, converting a float dtype. Throws
  // ValueError on a missing or unexpected name or integers for a float parameter, and ShapeError
  // on a shape mismatch, before changing anything.
  void load_state_dict(const NamedTensors& state);
  // load_state_dict's checks, then each parameter takes its tensor's data where the dtypes agree
  // (set_data) instead of copying it: for a loader whose tensors nothing else holds, such as a
  // checkpoint's just decoded, so that half a gigabyte of weights is not copied a second time.
  void take_state_dict(const NamedTensors& state);

 protected:
  // Registers `value` as a leaf that requires grad; returns the handle to keep as a member.
  Tensor register_parameter(const std::string& name, Tensor value);
  // Registers `value` as a buffer (no grad); returns the handle to keep as a member.
  Tensor register_buffer(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  // The tensors of this module and its submodules, of `params_` or of `buffers_`.
  void collect(const std::string& prefix, NamedTensors Module::*kind, NamedTensors& out) const;
  void check_new_name(const std::string& name, const char* op) const;
  // name -> own tensor, once load_state_dict's checks on `state` have passed.
  std::unordered_map<std::string, Tensor> checked_own_tensors(const NamedTensors& state) const;

  NamedTensors params_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// An indexable list of submodules named "0", "1", ... (as torch.nn.ModuleList).
template <class M>
class ModuleList : public Module {
 public:
  void push_back(std::shared_ptr<M> module) {
    items_.push_back(register_module(std::to_string(items_.size()), std::move(module)));
  }
  M& operator[](size_t i) const { return *items_.at(i); }
  size_t size() const { return items_.size(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace tinygpt::nn
