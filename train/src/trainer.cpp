#include "tinygpt/train/trainer.hpp"

#include <chrono>
#include <cmath>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/profile.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::train {

void TrainOptions::validate() const {
  auto fail = [](const std::string& what) { throw ValueError("train: " + what); };
  if (steps < 1) fail(fmt::format("steps must be at least 1, got {}", steps));
  if (batch < 1) fail(fmt::format("batch must be at least 1, got {}", batch));
  if (!(lr > 0)) fail(fmt::format("lr must be positive, got {}", lr));
  if (!(min_lr >= 0)) fail(fmt::format("min_lr must be >= 0, got {}", min_lr));
  if (min_lr > lr) {
    fail(fmt::format("min_lr {} is above lr {}: the learning rate decays from lr down to min_lr",
                     min_lr, lr));
  }
  if (warmup < 0) fail(fmt::format("warmup must be >= 0, got {}", warmup));
  if (lr_decay_steps < 0) fail(fmt::format("lr_decay_steps must be >= 0, got {}", lr_decay_steps));
  if (!(weight_decay >= 0)) fail(fmt::format("weight_decay must be >= 0, got {}", weight_decay));
  if (!(beta1 >= 0 && beta1 < 1)) fail(fmt::format("beta1 must be in [0, 1), got {}", beta1));
  if (!(beta2 >= 0 && beta2 < 1)) fail(fmt::format("beta2 must be in [0, 1), got {}", beta2));
  if (!(grad_clip >= 0)) fail(fmt::format("grad_clip must be >= 0, got {}", grad_clip));
  if (optimizer != "adamw" && optimizer != "sgd") {
    fail(fmt::format("optimizer must be adamw or sgd, got '{}'", optimizer));
  }
  if (eval_every < 1) fail(fmt::format("eval_every must be at least 1, got {}", eval_every));
  if (eval_iters < 1) fail(fmt::format("eval_iters must be at least 1, got {}", eval_iters));
}

CosineSchedule TrainOptions::schedule() const {
  return {lr, min_lr, warmup, lr_decay_steps > 0 ? lr_decay_steps : steps};
}

Trainer::Trainer(nn::GPT& model, const data::TextDataset& dataset, TrainOptions options)
    : model_(model), dataset_(dataset), options_(std::move(options)), data_gen_(options_.seed) {
  options_.validate();
  auto groups = decay_groups(model_, options_.weight_decay);
  if (options_.optimizer == "sgd") {
    optimizer_ = std::make_unique<SGD>(std::move(groups), options_.lr, options_.momentum);
  } else {
    optimizer_ = std::make_unique<AdamW>(
        std::move(groups), AdamWOptions{options_.lr, options_.beta1, options_.beta2, 1e-8});
  }
  params_ = model_.parameters();
}

StepStats Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  model_.train();
  const data::Batch batch =
      dataset_.sample_batch(data::Split::train, options_.batch, data_gen_);  // (B,T) each
  optimizer_->zero_grad();
  profile_mark("(step: batch, zero_grad)");
  const Tensor loss = model_.loss(batch.inputs, batch.targets);
  const double loss_value = loss.item();
  if (!std::isfinite(loss_value)) {
    throw DivergedError(fmt::format("training diverged: loss is {} at step {}", loss_value,
                                    step_ + 1));
  }
  loss.backward();
  StepStats stats;
  stats.grad_norm = clip_grad_norm(params_, options_.grad_clip);
  profile_mark("(step: clip_grad_norm)");
  if (!std::isfinite(stats.grad_norm)) {
    throw DivergedError(fmt::format("training diverged: gradient norm is {} at step {}",
                                    stats.grad_norm, step_ + 1));
  }
  stats.lr = options_.schedule().at(step_);
  optimizer_->set_lr(stats.lr);
  optimizer_->step();
  profile_mark("(step: optimizer)");
  ++step_;
  stats.step = step_;
  stats.loss = loss_value;
  stats.tokens = batch.inputs.numel();
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

EvalStats Trainer::evaluate() {
  NoGradGuard no_grad;
  model_.eval();
  Generator gen(options_.seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(step_ + 1)));
  auto mean_loss = [&](data::Split split) {
    double total = 0.0;
    for (int64_t i = 0; i < options_.eval_iters; ++i) {
      const data::Batch batch = dataset_.sample_batch(split, options_.batch, gen);
      total += model_.loss(batch.inputs, batch.targets).item();
    }
    return total / static_cast<double>(options_.eval_iters);
  };
  EvalStats stats;
  stats.step = step_;
  stats.train_loss = mean_loss(data::Split::train);
  const bool has_val = dataset_.size(data::Split::val) > dataset_.block_size();
  stats.val_loss = has_val ? mean_loss(data::Split::val) : NAN;
  model_.train();
  // A step can leave weights that still give a finite training loss on its own batch but not
  // on these: such a model must not be checkpointed as good.
  for (const double loss : {stats.train_loss, has_val ? stats.val_loss : 0.0}) {
    if (!std::isfinite(loss)) {
      throw DivergedError(
          fmt::format("training diverged: evaluation loss is {} after step {}", loss, step_));
    }
  }
  return stats;
}

}  // namespace tinygpt::train
