#include "tinygpt/train/trainer.hpp"

#include <chrono>
#include <algorithm>
#include <cmath>
#include <optional>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/profile.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/nn/attention.hpp"

namespace tinygpt::train {

void TrainOptions::validate() const {
  const Operation op("TrainOptions");
  // The common refusal: "<name> must be <requirement>, got <value>".
  const auto require = [&op](bool ok, const char* name, const auto& value, const std::string& requirement) {
    if (!ok) throw SettingError(op, name, value, fmt::format("{} must be {}, got {}", name, requirement, value));
  };
  const auto check_count = [&](const char* name, int64_t value, int64_t most) {
    require(value >= 1 && value <= most, name, value, fmt::format("in [1, {}]", most));
  };
  check_count("steps", steps, kMaxSteps);
  check_count("batch", batch, kMaxBatch);
  check_count("grad_accum", grad_accum, kMaxBatch);
  if (batch % grad_accum != 0) {
    throw SettingError(op, {named("batch", batch), " is not divisible by ", named("grad-accum", grad_accum),
                            ": a step splits its batch into equal micro-batches"});
  }
  require(lr > 0, "lr", lr, "positive");
  require(min_lr >= 0, "min_lr", min_lr, ">= 0");
  if (min_lr > lr) {
    throw SettingError(op, {named("min_lr", min_lr), " is above ", named("lr", lr),
                            ": the learning rate decays from lr down to min_lr"});
  }
  require(warmup >= 0, "warmup", warmup, ">= 0");
  require(lr_decay_steps >= 0, "lr_decay_steps", lr_decay_steps, ">= 0");
  require(weight_decay >= 0, "weight_decay", weight_decay, ">= 0");
  require(beta1 >= 0 && beta1 < 1, "beta1", beta1, "in [0, 1)");
  require(beta2 >= 0 && beta2 < 1, "beta2", beta2, "in [0, 1)");
  require(grad_clip >= 0, "grad_clip", grad_clip, ">= 0");
  require(optimizer == "adamw" || optimizer == "sgd", "optimizer", fmt::format("'{}'", optimizer),
          "adamw or sgd");
  check_count("eval_every", eval_every, kMaxSteps);
  check_count("eval_iters", eval_iters, kMaxBatch);
  const std::optional<Precision> products = precision_from_name(precision);
  require(products.has_value(), "precision", fmt::format("'{}'", precision), "f32 or bf16");
  if (*products == Precision::bf16) {
    const std::string reason = bf16_unsupported_reason();
    if (!reason.empty()) throw SettingError(op, {named("precision", "'bf16'"), " cannot run here: " + reason});
  }
}

CosineSchedule TrainOptions::schedule() const {
  return {lr, min_lr, warmup, lr_decay_steps > 0 ? lr_decay_steps : steps};
}

Trainer::Trainer(nn::CausalLM& model, const data::TextDataset& dataset, TrainOptions options,
                 distributed::Communicator& comm)
    : Trainer(std::make_unique<LanguageModelObjective>(model, dataset), std::move(options), comm) {}

Trainer::Trainer(std::unique_ptr<Objective> objective, TrainOptions options,
                 distributed::Communicator& comm)
    : objective_(std::move(objective)), options_(std::move(options)), comm_(comm),
      data_gen_(options_.seed) {
  options_.validate();
  precision_ = parse_precision(options_.precision);
  if (options_.batch % micro_batches() != 0) {
    throw SettingError(Operation("Trainer"),
                       {named("batch", options_.batch),
                        fmt::format(" cannot be split across {} ranks x {} micro-batches (grad-accum): "
                                    "it must be a multiple of {}", comm_.size(), options_.grad_accum,
                                    micro_batches())});
  }
  auto groups = decay_groups(objective_->model(), options_.weight_decay);
  if (options_.optimizer == "sgd") {
    optimizer_ = std::make_unique<SGD>(std::move(groups), options_.lr, options_.momentum);
  } else {
    optimizer_ = std::make_unique<AdamW>(
        std::move(groups), AdamWOptions{options_.lr, options_.beta1, options_.beta2, 1e-8});
  }
  params_ = objective_->model().parameters();
}

double Trainer::accumulate_gradient(int64_t first, int64_t count) {
  // Its share of the batch's predicted tokens: its mean loss times this, summed over the
  // micro-batches, is the batch's mean loss, and likewise for the gradients.
  const double share = static_cast<double>(objective_->predicted_tokens(first, count)) /
                       static_cast<double>(objective_->predicted_tokens(0, options_.batch));
  optimizer_->zero_grad();
  const Tensor loss = objective_->loss(first, count);
  loss.backward(Tensor::full(loss.shape(), share, loss.dtype()));  // share 1: plain backward()
  return share * loss.item();
}

void Trainer::add_to_sum(bool first) {
  size_t total = 0;
  for (const Tensor& p : params_) total += static_cast<size_t>(p.numel());
  summed_grads_.resize(total);
  float* sum = summed_grads_.data();
  for (const Tensor& p : params_) {
    const int64_t n = p.numel();
    if (!p.grad().defined()) {
      if (first) std::fill(sum, sum + n, 0.0f);
    } else if (first) {
      std::copy(p.grad().data<float>(), p.grad().data<float>() + n, sum);
    } else {
      const float* g = p.grad().data<float>();
      for (int64_t i = 0; i < n; ++i) sum[i] += g[i];
    }
    sum += n;
  }
}

void Trainer::sum_to_grads() {
  const float* sum = summed_grads_.data();
  for (Tensor& p : params_) {
    if (!p.grad().defined()) p.set_grad(Tensor::zeros(p.shape()));
    Tensor grad = p.grad();  // a handle on the same buffer
    std::copy(sum, sum + p.numel(), grad.data<float>());
    sum += p.numel();
  }
}

StepStats Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  const PrecisionGuard precision(precision_);
  objective_->model().train();
  nn::redraw_performer_features(objective_->model(), step_, options_.seed);
  // Every rank draws the whole batch, as a single process does, and takes its rows: the data
  // stream, and so a resume, does not depend on how the batch is split.
  objective_->draw(data::Split::train, options_.batch, data_gen_);
  profile_mark("(step: batch)");
  const int64_t parts = micro_batches();
  const int64_t rows = micro_batch_rows();
  double loss_value = 0.0;
  if (parts == 1) {
    loss_value = accumulate_gradient(0, options_.batch);
  } else {
    for (int64_t k = 0; k < options_.grad_accum; ++k) {
      loss_value += accumulate_gradient((comm_.rank() * options_.grad_accum + k) * rows, rows);
      add_to_sum(k == 0);
    }
  }
  StepStats stats;
  if (comm_.size() > 1) {
    const double before = comm_.stats().seconds;
    comm_.allreduce_sum(summed_grads_.data(), static_cast<int64_t>(summed_grads_.size()));
    comm_.allreduce_sum(&loss_value, 1);
    stats.allreduce_seconds = comm_.stats().seconds - before;
    profile_mark("(step: allreduce)");
  }
  if (parts > 1) sum_to_grads();
  // Checked on the summed values, so every rank of a run takes the same decision.
  if (!std::isfinite(loss_value)) {
    throw DivergedError(fmt::format("training diverged: loss is {} at step {}", loss_value,
                                    step_ + 1));
  }
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
  stats.tokens = objective_->batch_tokens();
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

EvalStats Trainer::evaluate() {
  NoGradGuard no_grad;
  const PrecisionGuard precision(precision_);
  objective_->model().eval();
  Generator gen(options_.seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(step_ + 1)));
  // Rank r evaluates batches r, r + P, ... (all ranks draw them all, to stay in step); the
  // per-batch losses are then summed across ranks (x + 0 is exact) and averaged in batch order,
  // so every rank, and a single process, gets the same bits.
  auto mean_loss = [&](data::Split split) {
    std::vector<double> losses(static_cast<size_t>(options_.eval_iters), 0.0);
    for (int64_t i = 0; i < options_.eval_iters; ++i) {
      objective_->draw(split, options_.batch, gen);
      if (i % comm_.size() == comm_.rank()) {
        losses[static_cast<size_t>(i)] = objective_->loss(0, options_.batch).item();
      }
    }
    comm_.allreduce_sum(losses.data(), options_.eval_iters);
    double total = 0.0;
    for (const double loss : losses) total += loss;
    return total / static_cast<double>(options_.eval_iters);
  };
  EvalStats stats;
  stats.step = step_;
  stats.train_loss = mean_loss(data::Split::train);
  const bool has_val = objective_->has(data::Split::val);
  stats.val_loss = has_val ? mean_loss(data::Split::val) : NAN;
  objective_->model().train();
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
