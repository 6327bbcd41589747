#include "tinygpt/analysis/prune_checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/heads/pruning.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/run_lock.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/run.hpp"

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
    const Tensor mask = heads::head_keep_mask(config, layer, removed, model.parameters().front().dtype());
    if (!mask.defined()) continue;
    hooks.add(nn::hook_name(layer, nn::HookPoint::attn_z), [mask](const Tensor& z) { return z * mask; });
  }
  const int64_t t = tokens.size(1);
  return model.loss(narrow(tokens, 1, 0, t - 1), narrow(tokens, 1, 1, t - 1)).item();
}

// The heads `list` names, refused as a SettingError on "pruned_heads" when the list is malformed,
// names a head the model does not have, or leaves a layer without heads.
std::vector<heads::HeadRef> heads_to_prune(const nn::GPTConfig& config, const std::string& list) {
  try {
    const std::vector<heads::HeadRef> removed = heads::parse_head_list(list, config.n_layer, config.n_head);
    std::map<int64_t, int64_t> per_layer;
    for (const heads::HeadRef& h : removed) {
      if (++per_layer[h.layer] == config.layer_heads(h.layer)) {
        throw ValueError(fmt::format("it names every head of layer {}; a layer keeps at least one", h.layer));
      }
    }
    return removed;
  } catch (const ValueError& e) {
    throw SettingError(Operation("prune"), "pruned_heads", list, e.in_terms());
  }
}

// Where the pruned model may go, checked before anything is read or written: a new or empty
// folder, or with `force` a folder of other files or of another model, whose files it replaces.
// Never the model's own folder, nor a training run's (its optimiser state and log would be left
// beside weights they do not fit) or a folder a live run holds.
void check_out_folder(const std::string& model_dir, const std::string& out_dir, bool force) {
  std::error_code ec;
  if (std::filesystem::equivalent(model_dir, out_dir, ec)) {
    throw SettingError(Operation("prune"), {named("out", out_dir), " is the folder of the model "
                                            "it prunes; the pruned model goes to another"});
  }
  const std::string holder = io::run_lock_holder(out_dir);
  if (!holder.empty()) {
    throw io::IOError(fmt::format("{} is in use by a training run (pid {})", out_dir, holder));
  }
  const std::vector<std::string> names = train::foreign_entries(out_dir);
  if (std::find(names.begin(), names.end(), train::kTrainerStateFile) != names.end()) {
    throw io::IOError(fmt::format("{} holds a training run ({}); the pruned model goes to another "
                                  "folder, so that its weights, optimiser state and log stay together",
                                  out_dir, train::kTrainerStateFile));
  }
  if (names.empty() || force) return;
  if (train::has_checkpoint(out_dir)) {
    throw io::IOError({out_dir + " already holds a model; name another folder, or pass ",
                       MessagePart("force", ""), " to replace it"});
  }
  throw io::IOError({fmt::format("{} is not empty ({}); name another folder, or pass ", out_dir,
                                 train::brief_list(names)),
                     MessagePart("force", ""), " to write the model's files beside them"});
}

}  // namespace

MethodOutput prune_checkpoint(const std::string& model_dir, const std::string& heads,
                              const std::string& out_dir, bool force) {
  check_out_folder(model_dir, out_dir, force);
  train::LoadedModel loaded = train::load_model(model_dir);
  const nn::GPTConfig& config = loaded.config;
  const std::vector<heads::HeadRef> removed = heads_to_prune(config, heads);
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
