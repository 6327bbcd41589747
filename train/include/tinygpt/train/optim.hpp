#pragma once
// Optimisers over a model's parameters. Each step is one fused pass over every parameter's raw
// memory (moments, bias correction, decay and update together).
#include <memory>
#include <string>
#include <vector>

#include "tinygpt/nn/module.hpp"

namespace tinygpt::train {

struct ParamGroup {
  std::vector<std::pair<std::string, Tensor>> params;  // named, so optimiser state can be saved
  double weight_decay = 0.0;
};

// nanoGPT's split: weight decay on every matrix and embedding (ndim >= 2), none on biases and
// LayerNorm parameters.
std::vector<ParamGroup> decay_groups(const nn::Module& model, double weight_decay);

class Optimizer {
 public:
  explicit Optimizer(std::vector<ParamGroup> groups, double lr);
  virtual ~Optimizer() = default;

  virtual void step() = 0;  // parameters without a gradient are left alone
  void zero_grad();
  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }
  int64_t steps_taken() const { return t_; }

  // Everything needed to continue exactly: per-parameter buffers named "<kind>.<param>".
  virtual nn::NamedTensors state() const = 0;
  // Restores state() output and the step count; ValueError/ShapeError on a mismatch.
  virtual void load_state(const nn::NamedTensors& state, int64_t steps_taken) = 0;

 protected:
  std::vector<ParamGroup> groups_;
  double lr_;
  int64_t t_ = 0;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW.
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options);
  void step() override;
  nn::NamedTensors state() const override;
  void load_state(const nn::NamedTensors& state, int64_t steps_taken) override;

 private:
  AdamWOptions options_;
  std::vector<Tensor> m_, v_;  // first and second moments, one per parameter in group order
};

// SGD with momentum and (coupled, L2) weight decay, as torch.optim.SGD.
class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, double lr, double momentum);
  void step() override;
  nn::NamedTensors state() const override;
  void load_state(const nn::NamedTensors& state, int64_t steps_taken) override;

 private:
  double momentum_;
  std::vector<Tensor> velocity_;
};

// Scales every gradient so their global L2 norm is at most max_norm; returns the norm before.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

// Linear warmup from 0 to `lr` over `warmup` steps, then cosine decay to `min_lr` at
// `total` steps (and min_lr after).
struct CosineSchedule {
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup = 100;
  int64_t total = 2000;
  double at(int64_t step) const;
};

}  // namespace tinygpt::train
