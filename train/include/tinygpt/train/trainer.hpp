#pragma once
// The training loop, usable from C++ in a few lines (examples/train_tiny_gpt.cpp) and driven by
// `tinygpt train`. One step: sample a batch, forward, backward, clip, set the scheduled lr,
// update. Everything random comes from generators whose states a checkpoint saves (trainer_state.json, train/run.hpp), so a
// run saved at step k and resumed ends bit-identical to an uninterrupted one.
//
// A step's batch can be split into micro-batches: grad_accum of them in turn in this process,
// times the ranks of a data-parallel run (distributed::Communicator), each rank taking its slice of the
// same drawn batch. Each micro-batch's gradient is weighted by its share of the batch's tokens,
// so the summed gradient is the gradient of the whole batch's mean loss (up to rounding); the
// gradient norm, the clip and the update are those of one step on the whole batch.
#include <memory>
#include <string>
#include <vector>

#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/distributed/communicator.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/train/objective.hpp"
#include "tinygpt/train/optim.hpp"

namespace tinygpt::train {

struct TrainOptions {
  // The largest counts a run takes, from the command line or a trainer_state.json alike: beyond
  // them a batch or an evaluation would only fail to allocate, a step count only overflow.
  static constexpr int64_t kMaxBatch = int64_t{1} << 20;      // also grad_accum, eval_iters
  static constexpr int64_t kMaxSteps = int64_t{1} << 40;      // also eval_every

  int64_t steps = 2000;
  int64_t batch = 12;      // sequences per step, over all micro-batches and ranks
  int64_t grad_accum = 1;  // micro-batches per step in each process; must divide batch
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup = 100;
  int64_t lr_decay_steps = 0;  // the cosine schedule's horizon; 0 = steps
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double grad_clip = 1.0;  // 0 = no clipping
  std::string optimizer = "adamw";  // or "sgd"
  double momentum = 0.9;            // sgd only
  int64_t eval_every = 250;
  int64_t eval_iters = 20;  // batches per split in each evaluation
  uint64_t seed = 1337;
  // Of the products (autograd/precision.hpp): "f32", or "bf16" (bf16 inputs, f32 accumulation;
  // weights, gradients and optimiser state stay f32). Steps and evaluations run in it.
  std::string precision = "f32";

  void validate() const;  // ValueError naming the first bad option
  CosineSchedule schedule() const;
};

struct StepStats {
  int64_t step = 0;  // steps completed, this one included
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  double seconds = 0.0;  // wall time of this step
  int64_t tokens = 0;    // tokens processed by this step, over all ranks
  double allreduce_seconds = 0.0;  // of `seconds`, the time spent summing across ranks
};

struct EvalStats {
  int64_t step = 0;
  double train_loss = 0.0;
  double val_loss = 0.0;  // NaN when the dataset has no validation split
};

// Thrown when the loss or the gradient norm of a step, or an evaluation loss, is not finite. A
// step that throws leaves the parameters as they were before it.
class DivergedError : public Error {
 public:
  using Error::Error;
};

class Trainer {
 public:
  // `comm`: the ranks this trainer is one of; the default is a single process. Throws
  // ValueError unless batch splits evenly into comm.size() x grad_accum micro-batches.
  Trainer(std::unique_ptr<Objective> objective, TrainOptions options,
          distributed::Communicator& comm = distributed::single_process());
  // A causal LM (the GPT, or one of your own) on a text: LanguageModelObjective.
  Trainer(nn::CausalLM& model, const data::TextDataset& dataset, TrainOptions options,
          distributed::Communicator& comm = distributed::single_process());

  StepStats step();
  // Mean loss over eval_iters batches of each split, in eval mode, drawn from a generator seeded
  // by (seed, step) so evaluating never disturbs the training stream; the ranks share the
  // batches out and every rank returns the same numbers. Throws DivergedError when a mean loss
  // is not finite.
  EvalStats evaluate();
  bool done() const { return step_ >= options_.steps; }
  int64_t steps_done() const { return step_; }
  const TrainOptions& options() const { return options_; }
  // Micro-batches per step over all ranks, and sequences in each.
  int64_t micro_batches() const { return comm_.size() * options_.grad_accum; }
  int64_t micro_batch_rows() const { return options_.batch / micro_batches(); }

  Optimizer& optimizer() { return *optimizer_; }
  Objective& objective() { return *objective_; }
  Generator& data_generator() { return data_gen_; }
  // Continue from a saved step: the optimiser state and generator states must be restored too.
  void set_steps_done(int64_t step) { step_ = step; }

 private:
  // Forward and backward of rows [first, first + count) of the drawn batch, the gradient scaled
  // by their share of its predicted tokens; returns their loss times that share.
  double accumulate_gradient(int64_t first, int64_t count);
  // Copies (first) or adds the parameters' gradients into summed_grads_; sum_to_grads puts the
  // (reduced) sum back into them.
  void add_to_sum(bool first);
  void sum_to_grads();

  std::unique_ptr<Objective> objective_;
  TrainOptions options_;
  Precision precision_ = Precision::f32;  // options_.precision, parsed once
  distributed::Communicator& comm_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<Tensor> params_;
  std::vector<float> summed_grads_;  // every parameter's gradient end to end, in params_ order
  Generator data_gen_;
  int64_t step_ = 0;
};

}  // namespace tinygpt::train
