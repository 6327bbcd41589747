#pragma once
// The commands of a language model's task (task_commands.hpp).
#include <optional>
#include <string>
#include <vector>

#include "tinygpt/analysis/circuits.hpp"
#include "tinygpt/analysis/heatmap_set.hpp"
#include "tinygpt/analysis/task_commands.hpp"
#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/composition.hpp"

namespace tinygpt::analysis {

// A circuit method's result: its JSON under `key` (merged into the whole when the key is ""),
// its table printed unless the output is JSON.
struct CircuitOutput {
  std::string key;
  MethodOutput out;
};

class LanguageModelCommands : public TaskCommands {
 public:
  LanguageModelCommands(train::LanguageModelTask& task, std::string model_dir);
  std::string what() const override;
  const char* sample_input() const override { return "prompt"; }
  std::vector<std::string> eval_rows_settings() const override { return {"batch", "block"}; }
  SampleOutput sample(const SampleRequest& request) override;
  MethodOutput evaluate(const EvalRequest& request) override;
  nlohmann::json heads(const HeadsRequest& request) override;
  void report_run(train::Run& run, const heads::ProbeSet* probes, std::FILE* out) override;

 private:
  // The GPT, or a ValueError saying that `command` needs one.
  nn::GPT& gpt(const char* command);
  std::string speed_lines(int64_t prompt, int64_t tokens, double seconds);
  std::vector<heads::HeadRef> removed_heads(const HeadsRequest& request);
  std::vector<CircuitOutput> circuit_methods(const HeadsRequest& request, const heads::HeadProbes& probes,
                                             const heads::HeadReport& report,
                                             const std::optional<heads::CompositionReport>& composition,
                                             HeatmapSet* pictures);

  train::LanguageModelTask& task_;
  std::string model_dir_;
};

}  // namespace tinygpt::analysis
