#pragma once
// The commands of a masked-LM encoder's task (task_commands.hpp): held-out masked-token loss and
// accuracy (and pseudo-perplexity), and the end of its training run. It generates no text: its
// [MASK]s are filled by train::fill_masks (tinygpt fill).
#include <string>
#include <vector>

#include "tinygpt/analysis/task_commands.hpp"
#include "tinygpt/heads/encoder_heads.hpp"

namespace tinygpt::analysis {

class EncoderCommands : public TaskCommands {
 public:
  EncoderCommands(train::EncoderTask& task, std::string model_dir);
  std::string what() const override { return "an encoder"; }
  const char* sample_input() const override { return "prompt"; }
  std::vector<std::string> eval_rows_settings() const override { return {"batch"}; }
  SampleOutput sample(const SampleRequest& request) override;
  MethodOutput evaluate(const EvalRequest& request) override;
  nlohmann::json heads(const HeadsRequest& request) override;
  void report_run(train::Run& run, const heads::ProbeSet* probes, std::FILE* out) override;

 private:
  // The explorer page (request.html) and the [MASK] view's pictures (request.mask_view_dir) of
  // the framed `picture`; returns the view as heads --json gives it ("mask_view").
  nlohmann::json write_views(const HeadsRequest& request, const std::vector<int64_t>& picture,
                             const std::vector<heads::EncoderHeadScores>& scores,
                             const heads::CopyAblation* each);

  train::EncoderTask& task_;
  std::string model_dir_;
};

}  // namespace tinygpt::analysis
