// The FLOP model behind bench's GFLOP/s and MFU (train/flop_estimate.hpp), against hand counts.
#include <catch2/catch.hpp>

#include "tinygpt/train/flop_estimate.hpp"

using namespace tinygpt;
using namespace tinygpt::train;

TEST_CASE("training FLOPs per token are 6 N + 12 L C T, N without the position embedding",
          "[train][flops]") {
  nn::GPTConfig c;  // the demo's model: 106,368 parameters with a vocabulary of 34
  c.n_layer = 2;
  c.n_head = 8;
  c.n_embd = 64;
  c.block_size = 64;
  c.vocab_size = 34;
  CHECK(matmul_parameter_count(c) == 106368 - 64 * 64);
  CHECK(training_flops_per_token(c) == 6.0 * 102272 + 12.0 * 2 * 64 * 64);  // 711,936

  // Positions inside attention have no table: every parameter enters a product.
  c.position_embedding = nn::PositionEmbedding::rope;
  CHECK(matmul_parameter_count(c) == 102272);

  // A sliding window's queries meet W + G keys, not the context's T, unless the window is longer.
  c.attention = AttentionPattern::sliding_window(16, 2);
  CHECK(training_flops_per_token(c) == 6.0 * 102272 + 12.0 * 2 * 64 * 18);
  c.attention = AttentionPattern::sliding_window(100);
  CHECK(training_flops_per_token(c) == 6.0 * 102272 + 12.0 * 2 * 64 * 64);
}

TEST_CASE("MFU is the achieved FLOP rate as a share of the peak", "[train][flops]") {
  CHECK(model_flops_utilization(1e9, 0.01, 2e11) == Approx(0.5));
  CHECK(model_flops_utilization(3e9, 0.01, 3e11) == Approx(1.0));
}
