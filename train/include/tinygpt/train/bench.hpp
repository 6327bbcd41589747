#pragma once
// Timing a task's training steps (forward, backward, gradient clipping, the optimiser) through a
// Trainer, and for a family with a FLOP estimate putting them against the machine's arithmetic
// peak, measured with a register-only kernel (machine_peak.hpp) that no library's kernel choice
// can lower:
//
//   std::unique_ptr<Task> task = random_task(config, 65, settings.train_options());  // task.hpp
//   const BenchReport report = bench(*task, settings, "synthetic random tokens");
//   fmt::print("{}", report.text);  // or report.json
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/train/task.hpp"
#include "tinygpt/train/trainer.hpp"

namespace tinygpt::train {

struct BenchSettings {
  int64_t batch = 12;   // rows per step
  int64_t steps = 20;   // timed steps
  int64_t warmup = 3;   // untimed steps first (caches, allocator)
  uint64_t seed = 1337;
  std::string precision = "f32";
  bool profile = false;  // each op's forward and backward time of the timed steps
  // Side of the square f32 product whose rate is measured through matmul (0: none); only with a
  // FLOP estimate, beside the machine's peak.
  int64_t peak_size = 2048;

  // The Trainer's options: warmup + steps steps of `batch` in `precision`, a learning-rate warmup
  // of at most 100 steps, and no evaluation.
  TrainOptions train_options() const;
};

// One report, as data and as the table that says the same.
struct BenchReport {
  nlohmann::json json;
  std::string text;
};

// Times `settings.steps` training steps of `task` after `settings.warmup` untimed ones. The
// report holds the step times, tokens/s, peak RSS, the final loss, how the steps ran (threads,
// OpenMP's idle spinning, subnormals) and what ran the products; for a family with a FLOP estimate
// (StepShape::flops) also the model FLOPs, the machine's peak probed before and after the steps,
// MFU, the product probe, the inference state and the allocator's counts. ValueError for bf16
// products on a CPU with no bf16 peak to measure MFU against.
BenchReport bench(Task& task, const BenchSettings& settings, const std::string& data_name);

// Generation from a saved GPT with its key/value cache, batch 1, as `tinygpt sample` runs it.
struct GenerationSettings {
  int64_t prompt_tokens = 128;
  int64_t new_tokens = 256;
  int64_t top_k = 0;  // 0: greedy; else top-k sampling at temperature 1
  uint64_t seed = 1;
  Precision precision = Precision::f32;  // as sample --precision (nn::SampleOptions::precision)
};

// Loads `model_dir` and continues a prompt of ids 0, 1, 2, ...: the load's time, the first
// token's (the prompt's forward), decode tokens/s over the others, peak RSS, and the bound the
// machine's read bandwidth puts on decoding (every weight read once per token). ValueError for a
// folder that holds no GPT.
BenchReport bench_generation(const std::string& model_dir, const GenerationSettings& settings);

// This process's peak resident set so far, in MB.
double peak_rss_mb();

}  // namespace tinygpt::train
