#pragma once
// The commands of an encoder-decoder's task (task_commands.hpp): its output for a source,
// held-out loss and accuracy, the roles of its self-attention heads and the alignment of its
// cross-attention heads (seq2seq/), and the end of its training run.
#include <string>
#include <vector>

#include "tinygpt/analysis/task_commands.hpp"

namespace tinygpt::analysis {

class PairCommands : public TaskCommands {
 public:
  PairCommands(train::PairTask& task, std::string model_dir);
  std::string what() const override { return "an encoder-decoder"; }
  const char* sample_input() const override { return "source"; }
  std::vector<std::string> eval_rows_settings() const override { return {"batch"}; }
  SampleOutput sample(const SampleRequest& request) override;
  MethodOutput evaluate(const EvalRequest& request) override;
  nlohmann::json heads(const HeadsRequest& request) override;
  void report_run(train::Run& run, const heads::ProbeSet* probes, std::FILE* out) override;

 private:
  // The settings of a language model's heads request, refused when given.
  void refuse_language_model_settings(const HeadsRequest& request) const;

  train::PairTask& task_;
  std::string model_dir_;
};

}  // namespace tinygpt::analysis
