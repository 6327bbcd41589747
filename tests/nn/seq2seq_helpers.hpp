#pragma once
#include "tinygpt/nn.hpp"

namespace tinygpt::testing {

// A small encoder-decoder for behaviour tests.
inline nn::EncoderDecoderConfig tiny_seq2seq() {
  nn::EncoderDecoderConfig c;
  c.vocab_size = 9;
  c.d_model = 8;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.encoder_attention_heads = 2;
  c.decoder_attention_heads = 2;
  c.encoder_ffn_dim = 12;
  c.decoder_ffn_dim = 12;
  c.max_position_embeddings = 10;
  return c;
}

}  // namespace tinygpt::testing
