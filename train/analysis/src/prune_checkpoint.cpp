#include "tinygpt/analysis/prune_checkpoint.hpp"

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/heads/pruning.hpp"
#include "tinygpt/train/checkpoint.hpp"

namespace tinygpt::analysis {
namespace {

constexpr int64_t kCheckWindows = 8;

// Mean next-token loss of `model` on `tokens` (B,T), with `removed` heads zeroed at attn.z.
double window_loss(nn::GPT& model, const Tensor& tokens, const std::vector<heads::HeadRef>& removed) {
  NoGradGuard no_grad;
  model.eval();
  const nn::GPTConfig& config = model.config();
  nn::ScopedHooks hooks(model);
  for (int64_t layer = 0; layer < config.n_layer; ++layer) {
    const Tensor mask = heads::head_keep_mask(config.n_head, layer, removed, model.parameters().front().dtype());
    if (!mask.defined()) continue;
    hooks.add(nn::hook_name(layer, nn::HookPoint::attn_z), [mask](const Tensor& z) { return z * mask; });
  }
  const int64_t t = tokens.size(1);
  return model.loss(narrow(tokens, 1, 0, t - 1), narrow(tokens, 1, 1, t - 1)).item();
}

}  // namespace

MethodOutput prune_checkpoint(const std::string& model_dir, const std::string& heads,
                              const std::string& out_dir) {
  train::LoadedModel loaded = train::load_model(model_dir);
  const nn::GPTConfig& config = loaded.config;
  const std::vector<heads::HeadRef> removed = heads::parse_head_list(heads, config.n_layer, config.n_head);
  std::unique_ptr<nn::GPT> pruned = heads::prune_heads(*loaded.model, removed);
  Generator gen(0);
  std::vector<int64_t> ids(static_cast<size_t>(kCheckWindows * config.block_size));
  for (int64_t& id : ids) id = gen.randint(config.vocab_size);
  const Tensor tokens = Tensor::from_ids(ids, {kCheckWindows, config.block_size});
  const double intact = window_loss(*loaded.model, tokens, {});
  const double zeroed = window_loss(*loaded.model, tokens, removed);
  const double after = window_loss(*pruned, tokens, {});
  train::save_checkpoint(out_dir, *pruned, pruned->config_json(), *loaded.tokenizer);
  nlohmann::json pruned_heads = nlohmann::json::object();
  for (const auto& [layer, list] : pruned->config().pruned_heads) pruned_heads[std::to_string(layer)] = list;
  MethodOutput out;
  out.json = {{"pruned_heads", pruned_heads},
              {"parameters", {{"before", loaded.model->num_parameters()}, {"after", pruned->num_parameters()}}},
              {"loss", {{"intact", intact}, {"zero_ablated", zeroed}, {"pruned", after}}}};
  out.text = fmt::format(
      "pruned heads {} of {} into {}: {} -> {} parameters\nmean loss on {} random windows of {} "
      "tokens: intact {:.6f}, with the heads zeroed {:.6f}, pruned {:.6f}\n",
      heads::head_list_str(removed), model_dir, out_dir, loaded.model->num_parameters(),
      pruned->num_parameters(), kCheckWindows, config.block_size, intact, zeroed, after);
  return out;
}

}  // namespace tinygpt::analysis
