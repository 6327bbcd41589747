#pragma once
#include <memory>

#include "tinygpt/autograd/bf16_weight.hpp"
#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/nn/module.hpp"

namespace tinygpt::nn {

// How a Linear stores its weight: (in, out) as GPT-2's Conv1D, so GPT checkpoints keep Hugging
// Face's GPT-2 shapes; or (out, in) as torch.nn.Linear, which the BART-style encoder-decoder's
// checkpoints use. The product is one BLAS call either way (the transpose is a BLAS flag).
enum class WeightLayout { in_out, out_in };

// y = x @ W + bias over the last axis of x, W being weight or its transpose (the layout).
// Initialised as PyTorch does: uniform in +-1/sqrt(in).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen,
         WeightLayout layout = WeightLayout::in_out);
  Tensor forward(const Tensor& x) const { return forward(x, bias); }
  // The same product with `with_bias` (undefined: none) in place of `bias`: an edited copy of it,
  // as attention's detached key bias, still on the bf16 weight in generation.
  Tensor forward(const Tensor& x, const Tensor& with_bias) const;
  // forward(gelu(h)) as one op (gelu_linear: less memory under bf16) with the in_out layout; the
  // out_in layout takes the two ops.
  Tensor forward_gelu(const Tensor& h) const;
  int64_t in_features() const { return weight.size(layout_ == WeightLayout::in_out ? 0 : 1); }
  WeightLayout layout() const { return layout_; }
  // Keeps the weight rounded to bf16 beside the f32 parameter (generation in bf16): a forward of
  // one row then runs on it (linear_bf16, inference only); false drops it. The copy is taken now,
  // so a weight changed afterwards needs another call.
  void keep_bf16_weight(bool keep);

  Tensor weight;  // (in, out), or (out, in) for WeightLayout::out_in
  Tensor bias;    // (out), undefined without bias

 private:
  WeightLayout layout_;
  std::shared_ptr<const Bf16Weight> weight_bf16_;
};

}  // namespace tinygpt::nn
