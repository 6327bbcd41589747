#pragma once
// How much arithmetic a training step does, for throughput figures (bench's GFLOP/s and MFU).
// nanoGPT's estimate (PaLM, appendix B): per token, 6 N for the parameters' products, forward and
// backward, plus 12 L C T for attention's two (T x T) products over the full square, where N
// leaves out the position embedding (a lookup, not a product) and counts the tied token
// embedding once, as the LM head. Beside memory_estimate.hpp: both are on-paper models of a run.
#include <cstdint>

#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::train {

// The N of 6 N: the parameters that enter a matrix product.
int64_t matmul_parameter_count(const nn::GPTConfig& config);
// 6 N + 12 L C T, for a context of config.block_size (T: the keys a query meets, at most
// W + G with a sliding window; the head width d for linear attention).
double training_flops_per_token(const nn::GPTConfig& config);
// Model FLOPs utilisation: the rate achieved (flops_per_step / seconds_per_step) as a share of
// `peak_flops_per_second`.
double model_flops_utilization(double flops_per_step, double seconds_per_step,
                               double peak_flops_per_second);

}  // namespace tinygpt::train
