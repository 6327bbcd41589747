// The memory estimate a run is checked against before it allocates (train/memory_estimate.hpp).
#include <catch2/catch.hpp>

#include "tinygpt/train/memory_estimate.hpp"

using namespace tinygpt;
using namespace tinygpt::train;

TEST_CASE("parameter_count equals the built model's, for every shape option", "[train][memory]") {
  nn::GPTConfig base;
  base.vocab_size = 37;
  base.block_size = 16;
  base.n_layer = 2;
  base.n_head = 4;
  base.n_embd = 32;
  std::vector<nn::GPTConfig> configs(5, base);
  configs[1].position_embedding = nn::PositionEmbedding::rope;
  configs[2].n_kv_head = 2;
  configs[3].n_kv_head = 1;
  configs[3].position_embedding = nn::PositionEmbedding::alibi;
  configs[4].n_layer = 3;
  configs[4].n_embd = 48;
  for (const nn::GPTConfig& config : configs) {
    CHECK(parameter_count(config) == nn::GPT(config, 0).num_parameters());
  }
}

TEST_CASE("the estimate counts the optimiser's copies and one micro-batch's activations",
          "[train][memory]") {
  nn::GPTConfig c;
  c.vocab_size = 65;
  c.block_size = 64;
  c.n_layer = 2;
  c.n_head = 8;
  c.n_embd = 64;
  const MemoryEstimate adamw = estimate_training_memory(c, 16, "adamw");
  CHECK(adamw.model_bytes == 16.0 * static_cast<double>(parameter_count(c)));
  CHECK(estimate_training_memory(c, 16, "sgd").model_bytes == 8.0 * parameter_count(c));
  CHECK(estimate_training_memory(c, 16, "sgd", 0.9).model_bytes == 12.0 * parameter_count(c));
  CHECK(adamw.activation_bytes ==
        4.0 * 16 * 64 * (2 * (kActivationWidths * 64) + 3 * 65));
  CHECK(estimate_training_memory(c, 32, "adamw").activation_bytes == 2 * adamw.activation_bytes);
  c.dropout = 0.1;  // the unfused attention keeps (T,T) maps
  CHECK(estimate_training_memory(c, 16, "adamw").activation_bytes > adamw.activation_bytes);
}

TEST_CASE("a run far beyond the machine is refused, and the demo's shape is not", "[train][memory]") {
  CHECK(available_memory_bytes() > 0.0);
  nn::GPTConfig huge;
  huge.vocab_size = 65;
  huge.block_size = 65536;
  huge.n_layer = 64;
  huge.n_head = 8;
  huge.n_embd = 8192;
  try {
    check_training_memory(estimate_training_memory(huge, 16, "adamw"));
    FAIL("not refused");
  } catch (const MemoryError& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("GiB available") &&
                             Catch::Matchers::Contains("the layers or the width"));
    CHECK_THAT(e.message("--batch", "--layers"), Catch::Matchers::Contains("lower --batch (activations) or --layers (model)"));
  }
  nn::GPTConfig demo;
  demo.vocab_size = 65;
  demo.block_size = 64;
  demo.n_layer = 2;
  demo.n_head = 8;
  demo.n_embd = 64;
  CHECK_NOTHROW(check_training_memory(estimate_training_memory(demo, 16, "adamw")));
}
