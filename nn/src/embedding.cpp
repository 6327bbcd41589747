#include "tinygpt/nn/embedding.hpp"

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t dim, Generator& gen) {
  if (num_embeddings <= 0 || dim <= 0) {
    throw ValueError(Operation("Embedding"),
                     fmt::format("sizes must be positive, got {} x {}", num_embeddings,
                                 dim));
  }
  weight = register_parameter("weight", Tensor::randn({num_embeddings, dim}, gen));
}

Tensor Embedding::forward(const Tensor& ids) const { return embedding(weight, ids); }

}  // namespace tinygpt::nn
