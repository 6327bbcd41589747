#pragma once
// How a GPT knows where each token sits: the five position schemes and the sinusoidal table.
#include <cstdint>
#include <string>

#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::nn {

enum class PositionEmbedding {
  learned,     // GPT-2: a trained (block_size, C) table added to the token embeddings (wpe)
  sinusoidal,  // Vaswani et al. 2017: a fixed sin/cos table added to the token embeddings
  rope,        // Su et al. 2021: q and k of every head rotated by position (ops rotary_embedding)
  alibi,       // Press et al. 2022: -m_h (i - j) added to the attention scores
  none,        // nothing: causal attention alone
};

// "learned", "sinusoidal", "rope", "alibi", "none": the names of config.json's
// position_embedding_type and of `tinygpt train --pos`.
std::string position_embedding_name(PositionEmbedding p);
// ValueError naming the accepted names for anything else.
PositionEmbedding parse_position_embedding(const std::string& name);

// Only learned positions tie a model to its training context; the others run on any length.
inline bool has_context_limit(PositionEmbedding p) { return p == PositionEmbedding::learned; }

// (T,C) sinusoidal encodings of positions offset..offset+T-1, interleaved:
// PE(pos, 2i) = sin(pos / 10000^(2i/C)), PE(pos, 2i+1) = cos(pos / 10000^(2i/C)).
Tensor sinusoidal_positions(int64_t offset, int64_t length, int64_t dim, DType dtype = DType::f32);

}  // namespace tinygpt::nn
