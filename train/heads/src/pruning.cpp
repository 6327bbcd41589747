#include "tinygpt/heads/pruning.hpp"

#include <algorithm>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::heads {
namespace {

// The kept heads' slices of `w` along `axis`, each `width` wide, starting at `offset`.
std::vector<Tensor> kept_slices(const Tensor& w, int64_t axis, int64_t offset, int64_t width,
                                const std::vector<int64_t>& kept) {
  std::vector<Tensor> parts;
  for (int64_t h : kept) parts.push_back(narrow(w, axis, offset + h * width, width));
  return parts;
}

// c_attn's weight (axis 1) or bias (axis 0) with only the kept heads' q, k and v.
Tensor pruned_qkv(const Tensor& w, int64_t axis, int64_t c, int64_t d, const std::vector<int64_t>& kept) {
  std::vector<Tensor> parts;
  for (int64_t part = 0; part < 3; ++part) {
    for (const Tensor& t : kept_slices(w, axis, part * c, d, kept)) parts.push_back(t);
  }
  return concat(parts, axis);
}

}  // namespace

std::unique_ptr<nn::GPT> prune_heads(const nn::GPT& model, const std::vector<HeadRef>& heads) {
  nn::GPTConfig config = model.config();
  if (!config.pruned_heads.empty()) {
    throw ValueError(Operation("prune_heads"), "the model already has pruned heads; prune the original with "
                     "every head to remove at once");
  }
  for (const HeadRef& h : heads) config.pruned_heads[h.layer].push_back(h.head);
  for (auto& [layer, list] : config.pruned_heads) std::sort(list.begin(), list.end());
  auto pruned = std::make_unique<nn::GPT>(config, 0);  // validates the heads
  const DType dtype = model.parameters().front().dtype();
  pruned->to(dtype);
  NoGradGuard no_grad;
  const int64_t c = config.n_embd, d = c / config.n_head;
  // Every tensor of the original's shape is the original's (Performer's features too); the
  // pruned layers' attention below.
  const auto original = model.state_dict();
  for (auto& [name, p] : pruned->state_dict()) {
    for (const auto& [original_name, q] : original) {
      if (original_name == name && q.shape() == p.shape()) p.copy_(q);
    }
  }
  for (const auto& entry : config.pruned_heads) {
    const int64_t layer = entry.first;
    const std::vector<int64_t> kept = config.kept_heads(layer);
    const auto& from = *(*model.transformer->h)[static_cast<size_t>(layer)].attn;
    auto& to = *(*pruned->transformer->h)[static_cast<size_t>(layer)].attn;
    to.c_attn->weight.copy_(pruned_qkv(from.c_attn->weight, 1, c, d, kept));
    if (from.c_attn->bias.defined()) to.c_attn->bias.copy_(pruned_qkv(from.c_attn->bias, 0, c, d, kept));
    to.c_proj->weight.copy_(concat(kept_slices(from.c_proj->weight, 0, 0, d, kept), 0));
  }
  return pruned;
}

}  // namespace tinygpt::heads
