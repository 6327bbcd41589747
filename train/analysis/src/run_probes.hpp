#pragma once
// What `heads` probes a model of a run with (a language model's, an encoder's).
#include <string>

#include "tinygpt/analysis/task_commands.hpp"
#include "tinygpt/heads/probe_set.hpp"

namespace tinygpt::analysis {

// The request's text if given (cut to `block`), else the run's own validation windows of `block`
// tokens (its data and split as trainer_state.json records them, as training probed them).
heads::ProbeSet request_probes(const HeadsRequest& request, const std::string& model_dir,
                               const data::Tokenizer& tokenizer, int64_t block);

}  // namespace tinygpt::analysis
