// The memory estimate a run is checked against before it allocates (train/memory_estimate.hpp).
#include <catch2/catch.hpp>

#include "tinygpt/train/memory_estimate.hpp"

using namespace tinygpt;
using namespace tinygpt::train;

namespace {

nn::GPTConfig shape(int64_t layers, int64_t heads, int64_t width, int64_t context, int64_t vocab) {
  nn::GPTConfig c;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_embd = width;
  c.block_size = context;
  c.vocab_size = vocab;
  return c;
}

}  // namespace

TEST_CASE("parameter_count equals the built model's, for every shape option", "[train][memory]") {
  std::vector<nn::GPTConfig> configs(5, shape(2, 4, 32, 16, 37));
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

TEST_CASE("an encoder-decoder's parameter_count equals the built model's", "[train][memory]") {
  nn::EncoderDecoderConfig base;
  base.vocab_size = 23;
  base.d_model = 32;
  base.encoder_attention_heads = base.decoder_attention_heads = 4;
  base.encoder_ffn_dim = base.decoder_ffn_dim = 64;
  base.max_position_embeddings = 12;
  std::vector<nn::EncoderDecoderConfig> configs(4, base);
  configs[1].encoder_layers = 3;
  configs[1].decoder_layers = 1;
  configs[2].encoder_ffn_dim = 48;
  configs[2].decoder_ffn_dim = 80;
  configs[3].d_model = 48;
  configs[3].decoder_attention_heads = 2;
  for (const nn::EncoderDecoderConfig& config : configs) {
    CHECK(parameter_count(config) == nn::EncoderDecoder(config, 0).num_parameters());
  }
  const MemoryEstimate e = estimate_training_memory(base, 8, "adamw");
  CHECK(e.model_bytes == 16.0 * static_cast<double>(parameter_count(base)));
  // 2 encoder and 2 decoder layers of C 32, F 64, H 4, over P 12 positions, V 23.
  CHECK(e.activation_bytes ==
        4.0 * 8 * 12 * (2 * (12 * 32 + 2 * 64 + 2 * 4 * 12) + 2 * (18 * 32 + 2 * 64 + 4 * 4 * 12) + 3 * 23));
  CHECK(estimate_training_memory(base, 16, "adamw").activation_bytes == 2 * e.activation_bytes);
}

TEST_CASE("an encoder's parameter_count equals the built model's, and its activations are the "
          "encoder-decoder's encoder layers", "[train][memory]") {
  nn::BertConfig base;
  base.vocab_size = 23;
  base.hidden_size = 32;
  base.num_attention_heads = 4;
  base.intermediate_size = 64;
  base.max_position_embeddings = 12;
  std::vector<nn::BertConfig> configs(4, base);
  configs[1].num_hidden_layers = 3;
  configs[1].intermediate_size = 48;
  configs[2].position = nn::PositionEmbedding::rope;
  configs[2].pre_layer_norm = true;
  configs[3].hidden_size = 48;
  configs[3].type_vocab_size = 1;
  for (const nn::BertConfig& config : configs) {
    CHECK(parameter_count(config) == nn::BertForMaskedLM(config, 0).num_parameters());
  }
  // One formula: an encoder-decoder of the same encoder layers and no decoder layer.
  nn::EncoderDecoderConfig pairs;
  pairs.vocab_size = base.vocab_size;
  pairs.d_model = base.hidden_size;
  pairs.encoder_attention_heads = base.num_attention_heads;
  pairs.encoder_ffn_dim = base.intermediate_size;
  pairs.max_position_embeddings = base.max_position_embeddings;
  pairs.encoder_layers = base.num_hidden_layers;
  pairs.decoder_layers = 0;
  const MemoryEstimate e = estimate_training_memory(base, 8, "sgd");
  CHECK(e.model_bytes == 8.0 * static_cast<double>(parameter_count(base)));
  CHECK(e.activation_bytes == estimate_training_memory(pairs, 8, "sgd").activation_bytes);
  CHECK(e.activation_bytes == 4.0 * 8 * 12 * (2 * (12 * 32 + 2 * 64 + 2 * 4 * 12) + 3 * 23));
}

TEST_CASE("the estimate counts the optimiser's copies and one micro-batch's activations",
          "[train][memory]") {
  nn::GPTConfig c = shape(2, 8, 64, 64, 65);  // the demo's
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
  try {
    check_memory(estimate_training_memory(shape(64, 8, 8192, 65536, 65), 16, "adamw"));
    FAIL("not refused");
  } catch (const MemoryError& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("GiB available") &&
                             Catch::Matchers::Contains("the layers or the width"));
    CHECK_THAT(e.message("--batch", "--layers"), Catch::Matchers::Contains("lower --batch (activations) or --layers (model)"));
  }
  CHECK_NOTHROW(check_memory(estimate_training_memory(shape(2, 8, 64, 64, 65), 16, "adamw")));
}

TEST_CASE("evaluation's estimate is one forward pass's activations, whatever the depth",
          "[train][memory]") {
  const nn::GPTConfig two = shape(2, 8, 64, 64, 65), six = shape(6, 8, 64, 64, 65);
  const MemoryEstimate e = estimate_eval_memory(two, 16, 128);  // a window longer than the context
  CHECK(e.model_bytes == 0.0);  // the weights are loaded before the check
  CHECK(e.parameters == parameter_count(two));
  CHECK(e.activation_bytes == 4.0 * 16 * 128 * (kEvalWidths * 64 + 65));
  CHECK(estimate_eval_memory(six, 16, 128).activation_bytes == e.activation_bytes);
  CHECK(estimate_eval_memory(six, 16, 64).activation_bytes < estimate_training_memory(six, 16, "adamw").activation_bytes);

  nn::EncoderDecoderConfig pairs;
  pairs.vocab_size = 23;
  pairs.d_model = 32;
  pairs.encoder_attention_heads = 2;
  pairs.decoder_attention_heads = 4;
  const MemoryEstimate p = estimate_eval_memory(pairs, 8, 12);
  CHECK(p.model_bytes == 0.0);
  CHECK(p.activation_bytes == 4.0 * 8 * 12 * (32 * 32 + 3 * 4 * 12 + 23));

  try {
    check_memory(estimate_eval_memory(shape(1, 8, 8192, 16, 65), 65536, 65536));
    FAIL("not refused");
  } catch (const MemoryError& error) {
    const std::string message = error.message("--batch/--block", "--layers");
    CHECK_THAT(message, Catch::Matchers::StartsWith("this needs about") &&
                            Catch::Matchers::Contains("GiB of activations but the machine has") &&
                            Catch::Matchers::EndsWith("GiB available; lower --batch/--block"));
  }
}
