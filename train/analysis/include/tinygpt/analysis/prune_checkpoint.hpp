#pragma once
// `tinygpt prune`: a checkpoint with heads removed for good (heads/pruning.hpp) written as a
// folder of model files (config.json with "pruned_heads", model.safetensors, tokenizer.json),
// which every command loads and Hugging Face's GPT-2 prunes on load.
#include <string>

#include "tinygpt/analysis/circuits.hpp"

namespace tinygpt::analysis {

// Prunes `heads` ("L.H,L.H") from the GPT checkpoint in `model_dir` into `out_dir`, and checks
// the pruned model against the original with those heads zeroed: the mean next-token loss of
// both (and of the intact original) on seeded random windows of the context's length. JSON:
// {"pruned_heads": {"L": [H...]}, "parameters": {"before", "after"}, "loss": {"intact",
// "zero_ablated", "pruned"}}. A SettingError on "pruned_heads" for a bad head list (malformed, a
// head the model does not have, every head of a layer). `out_dir` is refused before anything is
// read: the model's own folder (a SettingError on "out"), a training run's folder or one a live
// run holds, and unless `force` a folder that holds anything (io::IOError); nothing is written then.
MethodOutput prune_checkpoint(const std::string& model_dir, const std::string& heads,
                              const std::string& out_dir, bool force = false);

}  // namespace tinygpt::analysis
