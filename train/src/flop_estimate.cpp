#include "tinygpt/train/flop_estimate.hpp"

#include <algorithm>

#include "tinygpt/train/memory_estimate.hpp"

namespace tinygpt::train {

int64_t matmul_parameter_count(const nn::GPTConfig& c) {
  const int64_t positions =
      c.position_embedding == nn::PositionEmbedding::learned ? c.block_size * c.n_embd : 0;
  return parameter_count(c) - positions;
}

double training_flops_per_token(const nn::GPTConfig& c) {
  // A sliding window's queries meet at most W + G keys, however long the context, a stride's
  // S + T / S, BigBird's W + G + R B; linear attention's running (d,d) state costs per token what d keys of width d
  // would.
  int64_t attended = c.block_size;
  if (c.attention.kind == AttentionPattern::Kind::window) {
    attended = std::min(c.block_size, c.attention.window + c.attention.global_tokens);
  } else if (c.attention.kind == AttentionPattern::Kind::strided) {
    attended = std::min(c.block_size, c.attention.stride + c.block_size / c.attention.stride);
  } else if (c.attention.kind == AttentionPattern::Kind::bigbird) {
    attended = std::min(c.block_size, c.attention.window + c.attention.global_tokens +
                                          c.attention.random_blocks * c.attention.block);
  } else if (c.attention.is_performer()) {
    attended = c.attention.features;  // the (M,d) state as M keys, phi(q) as M more products
  } else if (c.attention.is_linear()) {
    attended = c.n_embd / c.n_head;
  }
  return 6.0 * static_cast<double>(matmul_parameter_count(c)) +
         12.0 * static_cast<double>(c.n_layer) * static_cast<double>(c.n_embd) *
             static_cast<double>(attended);
}

double model_flops_utilization(double flops_per_step, double seconds_per_step,
                               double peak_flops_per_second) {
  return flops_per_step / seconds_per_step / peak_flops_per_second;
}

}  // namespace tinygpt::train
