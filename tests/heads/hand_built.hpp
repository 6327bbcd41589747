#pragma once
// A one-layer GPT whose weights are set by hand so that the answer is known: head 0 attends to
// the previous token (all but exactly), head 1 attends uniformly to every earlier position.
#include <memory>

#include "nn/nn_helpers.hpp"

namespace tinygpt::testing {

inline std::unique_ptr<nn::GPT> previous_token_model() {
  nn::GPTConfig config;
  config.vocab_size = 12;
  config.block_size = 8;
  config.n_layer = 1;
  config.n_head = 2;
  config.n_embd = 16;  // head size 8 = block size: one dimension per position
  auto model = std::make_unique<nn::GPT>(config, 1);
  for (Tensor& p : model->parameters()) p.fill_(0.0);
  auto& block = (*model->transformer->h)[0];
  block.ln_1->weight.fill_(1.0);
  block.ln_2->weight.fill_(1.0);
  model->transformer->ln_f->weight.fill_(1.0);
  // Position i is the one-hot e_i (dims 0..7); token v adds 0.3 on dim 8 + v % 8, which the
  // attention scores do not read, and which the (tied) output reads back.
  std::vector<double> wte(12 * 16, 0.0);
  for (int v = 0; v < 12; ++v) wte[static_cast<size_t>(v * 16 + 8 + v % 8)] = 0.3;
  model->transformer->wte->weight.copy_(Tensor::from(wte, {12, 16}));
  std::vector<double> wpe(8 * 16, 0.0);
  for (int i = 0; i < 8; ++i) wpe[static_cast<size_t>(i * 16 + i)] = 1.0;
  model->transformer->wpe->weight.copy_(Tensor::from(wpe, {8, 16}));
  // c_attn (C,3C) as x @ W. Head 0: k = x[0..8), q[m] = 10 x[m+1], so query i matches key i-1.
  std::vector<double> w(16 * 48, 0.0);
  for (int m = 0; m < 8; ++m) w[static_cast<size_t>(m * 48 + 16 + m)] = 1.0;
  for (int m = 0; m + 1 < 8; ++m) w[static_cast<size_t>((m + 1) * 48 + m)] = 10.0;
  // v = x for both heads, and c_proj passes each head's z through, so ablating a head matters.
  std::vector<double> proj(16 * 16, 0.0);
  for (int m = 0; m < 16; ++m) w[static_cast<size_t>(m * 48 + 32 + m)] = 1.0;
  for (int m = 0; m < 16; ++m) proj[static_cast<size_t>(m * 16 + m)] = 1.0;
  block.attn->c_attn->weight.copy_(Tensor::from(w, {16, 48}));
  block.attn->c_proj->weight.copy_(Tensor::from(proj, {16, 16}));
  return model;
}

}  // namespace tinygpt::testing
