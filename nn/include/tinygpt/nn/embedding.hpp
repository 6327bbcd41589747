#pragma once
#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/nn/module.hpp"

namespace tinygpt::nn {

// Lookup table: ids (...) of dtype i64 -> rows of weight (..., dim). Initialised N(0, 1).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, Generator& gen);
  Tensor forward(const Tensor& ids) const;

  Tensor weight;  // (num_embeddings, dim)
};

}  // namespace tinygpt::nn
