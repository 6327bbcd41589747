#include "run_probes.hpp"

#include <regex>

#include "command_errors.hpp"
#include "tinygpt/data/data_source.hpp"

namespace tinygpt::analysis {
namespace {

// The dataset's refusal of the run's own text (it shrank since training) in the run's terms: its
// context and validation share were set when it trained, not by the request, so the advice to
// change them goes too.
std::string in_run_terms(const Error& e) {
  const SettingNaming naming = [](const std::string& name) -> std::string {
    if (name == "block_size") return "the model's context of";
    if (name == "val_fraction") return "the run's validation share";
    return name;
  };
  return std::regex_replace(e.in_terms(naming), std::regex("; use a longer text.*$"), "");
}

}  // namespace

heads::ProbeSet request_probes(const HeadsRequest& r, const std::string& model_dir,
                               const data::Tokenizer& tokenizer, int64_t block) {
  if (!r.text.empty()) return heads::text_probes(encode_setting("text", r.text, tokenizer), tokenizer, block);
  const std::optional<train::RunState> run = train::trained_on(model_dir);
  if (!run) {
    throw SettingError(Operation("TaskCommands"),
                       {model_dir + " does not say what it was trained on; pass ", setting("text")});
  }
  const std::string text_now = r.run_text(*run, "text");
  const data::TextDataset dataset = [&] {
    try {
      return data::make_dataset(text_now, run->data_source, tokenizer, block, run->val_fraction);
    } catch (const ValueError& e) {
      throw ValueError(in_run_terms(e));
    }
  }();
  return heads::dataset_probes(dataset, tokenizer, run->data_source);
}

}  // namespace tinygpt::analysis
