// tinygpt fill: a masked LM's guesses for each [MASK] of a text.
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/train/bert_files.hpp"
#include "tinygpt/train/checkpoint.hpp"

namespace tinygpt::cli {
namespace {

struct FillFlags {
  std::string model;
  std::string text;
  int64_t top_k = 5;
  int threads = 0;
  bool json = false;
};

// The text's ids, refused in one line unless they hold a [MASK] and fit the model's window.
std::vector<int64_t> masked_ids(const FillFlags& f, const train::EncoderTask& task) {
  std::vector<int64_t> ids;
  try {
    ids = task.tokenizer().encode(f.text);
  } catch (const ValueError& e) {
    throw UsageError("--text: ", e);
  }
  if (std::find(ids.begin(), ids.end(), data::MaskedLMTokenizer::kMask) == ids.end()) {
    throw UsageError("--text has no [MASK] to fill (write [MASK] where a character is to be guessed)");
  }
  if (static_cast<int64_t>(ids.size()) > task.window()) {
    throw UsageError(fmt::format("--text has {} tokens; {} reads at most {}", ids.size(), f.model, task.window()));
  }
  return ids;
}

void run_fill(const FillFlags& f) {
  set_num_threads(f.threads);
  const std::unique_ptr<train::Task> task = train::load_task(f.model);
  if (!task->is<train::EncoderTask>()) {
    throw UsageError(fmt::format("--model {} is {} ({}), not a masked LM: tinygpt fill takes an encoder's "
                                 "folder (tinygpt train --arch encoder)", f.model, task->kind_phrase(), task->kind()));
  }
  train::EncoderTask& encoder = task->as<train::EncoderTask>();
  std::vector<int64_t> ids = masked_ids(f, encoder);
  const std::vector<train::MaskFill> fills = train::fill_masks(encoder.bert(), ids, f.top_k);
  nlohmann::json masks = nlohmann::json::array();
  for (const train::MaskFill& fill : fills) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [id, prob] : fill.top) top.push_back({{"token", encoder.tokenizer().token(id)}, {"prob", prob}});
    masks.push_back({{"position", fill.position}, {"top", top}});
    ids[static_cast<size_t>(fill.position)] = fill.top.front().first;
  }
  const std::string filled = encoder.tokenizer().decode(ids);
  if (f.json) {
    fmt::print("{}\n", json_text({{"text", filled}, {"masks", masks}}));
    return;
  }
  fmt::print("{}\n", filled);
  for (const nlohmann::json& mask : masks) {
    std::string guesses;
    for (const nlohmann::json& t : mask["top"]) {
      guesses += fmt::format("{}{} {:.3f}", guesses.empty() ? "" : ", ",
                             nlohmann::json(t["token"].get<std::string>()).dump(), t["prob"].get<double>());
    }
    fmt::print("  position {}: {}\n", mask["position"].get<int64_t>(), guesses);
  }
}

}  // namespace

void add_fill_command(CLI::App& app) {
  auto flags = std::make_shared<FillFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fill", "Fill each [MASK] of a text with a masked LM's most probable token (an encoder: tinygpt "
              "train --arch encoder, or a Hugging Face BertForMaskedLM folder with a tokenizer.json "
              "tinygpt reads)");
  cmd->add_option("--model", flags->model, "an encoder's checkpoint directory")->type_name("DIR")->required();
  cmd->add_option("--text", flags->text, "the text, with [MASK] where a character is to be guessed")->required();
  cmd->add_option("--top-k", flags->top_k, "guesses shown per [MASK], most probable first")
      ->check(integer_in(1, 1 << 20))->capture_default_str();
  add_threads_flag(*cmd, flags->threads);
  cmd->add_flag("--json", flags->json,
                "print {\"text\": the filled text, \"masks\": [{\"position\": i (the token's index in "
                "the text), \"top\": [{\"token\", \"prob\"}, ...]}]} as JSON");
  cmd->callback([flags] { run_fill(*flags); });
}

}  // namespace tinygpt::cli
