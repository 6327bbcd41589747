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
  // Converts every parameter to `dtype` in place (f64 for gradient checks).
  void to(DType dtype);

  // name -> tensor (the parameters themselves, not copies).
  NamedTensors state_dict() const;
  // Copies each tensor into the parameter of that name, converting a float dtype. Throws
  // ValueError on a missing or unexpected name or integers for a float parameter, and ShapeError
  // on a shape mismatch, before changing anything.
  void load_state_dict(const NamedTensors& state);

 protected:
  // Registers `value` as a leaf that requires grad; returns the handle to keep as a member.
  Tensor register_parameter(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void collect(const std::string& prefix, NamedTensors& out) const;

  NamedTensors params_;
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
