#include "tinygpt/analysis/task_commands.hpp"

#include "encoder_commands.hpp"
#include "language_model_commands.hpp"
#include "pair_commands.hpp"

namespace tinygpt::analysis {

std::unique_ptr<TaskCommands> commands_for(train::Task& task, const std::string& model_dir) {
  if (task.is<train::PairTask>()) return std::make_unique<PairCommands>(task.as<train::PairTask>(), model_dir);
  if (task.is<train::EncoderTask>()) return std::make_unique<EncoderCommands>(task.as<train::EncoderTask>(), model_dir);
  return std::make_unique<LanguageModelCommands>(task.as<train::LanguageModelTask>(), model_dir);
}

}  // namespace tinygpt::analysis
