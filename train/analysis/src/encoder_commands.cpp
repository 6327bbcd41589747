#include "encoder_commands.hpp"

#include <algorithm>
#include <optional>

#include "command_errors.hpp"
#include "run_probes.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/heads/encoder_heads.hpp"
#include "tinygpt/train/masked_lm_eval.hpp"

namespace tinygpt::analysis {
namespace {

// The fixed masking an evaluation scores, so that two evaluations of one model agree.
constexpr uint64_t kEvalMaskingSeed = 0;
// The windows pseudo-perplexity reads: each costs a pass of its length rows, so a whole held-out
// split of a large text would take minutes.
constexpr int64_t kPseudoWindows = 256;

void print_encoder_heads(std::FILE* out, const heads::EncoderProbes& probes,
                         const std::vector<heads::EncoderHeadScores>& scores,
                         const heads::CopyAblation* ablation, bool each) {
  fmt::print(out, "{} text windows and {} echo documents\n  head  role            score  prev   next   "
             "self   sink   copy   local  entropy{}\n", probes.texts.size(), probes.echoes.size(),
             each ? "  second-copy accuracy without it" : "");
  for (size_t k = 0; k < scores.size(); ++k) {
    const heads::EncoderHeadScores& h = scores[k];
    fmt::print(out, "  {}.{:<3} {:<15} {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}", h.layer,
               h.head, h.role, h.role_score, h.previous_token, h.next_token, h.self, h.sink, h.copy,
               h.local, h.entropy);
    if (each) fmt::print(out, "     {:.3f}", ablation->without_head[k]);
    fmt::print(out, "\n");
  }
  if (ablation == nullptr) {
    fmt::print(out, "copy heads: the model's context holds no echo document of two characters or more\n");
    return;
  }
  fmt::print(out, "second-copy masked accuracy {:.3f}; without the copy heads {} together {:.3f}, without "
             "as many others ({}) {:.3f}\n", ablation->accuracy, heads::head_list_str(ablation->copy_heads),
             ablation->without_copy_heads, heads::head_list_str(ablation->other_heads),
             ablation->without_other_heads);
}

std::string score_line(const train::MaskedLMScore& s) {
  return fmt::format("masked loss {:.4f}, masked accuracy {:.4f} over {} masked positions in {} windows",
                     s.loss, s.accuracy, s.masked, s.windows);
}

}  // namespace

EncoderCommands::EncoderCommands(train::EncoderTask& task, std::string model_dir)
    : task_(task), model_dir_(std::move(model_dir)) {}

SampleOutput EncoderCommands::sample(const SampleRequest&) {
  refuse("prompt", {fmt::format("{} is an encoder (a masked LM), which generates no text; fill "
                                "its [MASK]s with tinygpt fill", model_dir_)});
}

MethodOutput EncoderCommands::evaluate(const EvalRequest& r) {
  if (r.block > 0) refuse("block", {fmt::format("{} is an encoder, which reads windows of its own context", model_dir_)});
  const data::TextDataset dataset = data::make_dataset(r.text, data::absolute_source(r.data_source),
                                                       task_.tokenizer(), task_.window(), r.val_fraction, r.split);
  if (dataset.num_windows(r.split) == 0) {
    throw ValueError(fmt::format("{}: the {} split is shorter than one window of {} characters",
                                 r.data_source, r.split_name, task_.window() + 1));
  }
  const train::MaskedLMScore s = train::score_masked_lm(task_.bert(), dataset, r.split, task_.masking(),
                                                        r.batch, kEvalMaskingSeed);
  MethodOutput out{{{"masked_loss", s.loss}, {"masked_accuracy", s.accuracy}, {"masked", s.masked},
                    {"windows", s.windows}},
                   fmt::format("{} split of {}: {}", r.split_name, r.data_source, score_line(s))};
  if (r.pseudo) {
    const double ppl = train::pseudo_perplexity(task_.bert(), dataset, r.split, kPseudoWindows);
    const int64_t windows = std::min(kPseudoWindows, s.windows);
    out.json["pseudo_perplexity"] = ppl;
    out.json["pseudo_windows"] = windows;
    out.text += fmt::format("; pseudo-perplexity {:.3f} over the first {} windows", ppl, windows);
  }
  out.text += "\n";
  return out;
}

nlohmann::json EncoderCommands::heads(const HeadsRequest& r) {
  for (const char* name : {"pairs", "ablate_heads", "attribute", "composition", "importance", "patch",
                           "counterfactual", "prune_curve"}) {
    if (r.given.count(name) > 0) refuse(name, {fmt::format("{} is {}; its heads take ", model_dir_, what()), setting("text"), " and ", setting("ablate")});
  }
  if (r.ablate_each && r.ablate != "zero") refuse("ablate", {fmt::format("{} is {}; its heads are ablated by zeroing them", model_dir_, what())});
  nn::BertForMaskedLM& model = task_.bert();
  const heads::EncoderProbes probes = heads::encoder_probes(
      request_probes(r, model_dir_, task_.tokenizer(), task_.window()), task_.tokenizer(),
      model.config().max_position_embeddings);
  const std::vector<heads::EncoderHeadScores> scores = heads::score_encoder_heads(model, probes);
  std::optional<heads::CopyAblation> ablation;
  if (!probes.echoes.empty()) ablation = heads::ablate_copy_heads(model, probes.echoes, scores, r.ablate_each);
  const heads::CopyAblation* each = r.ablate_each && ablation ? &*ablation : nullptr;
  if (!r.json) print_encoder_heads(r.out, probes, scores, ablation ? &*ablation : nullptr, each != nullptr);
  nlohmann::json result = {{"model", model_dir_},
                           {"text_probes", probes.texts.size()},
                           {"echo_probes", probes.echoes.size()},
                           {"heads", heads::encoder_heads_json(scores, each)}};
  if (ablation) result["copy"] = heads::copy_ablation_json(*ablation);
  return result;
}

// The end of an encoder run: the training curves and the held-out masked accuracy.
void EncoderCommands::report_run(train::Run& run, const heads::ProbeSet*, std::FILE* out) {
  draw_run_curves(run, out);
  const data::TextDataset& data = task_.dataset();
  const data::Split split = data.num_windows(data::Split::val) > 0 ? data::Split::val : data::Split::train;
  const train::MaskedLMScore s = train::score_masked_lm(task_.bert(), data, split, task_.masking(), 32, kEvalMaskingSeed);
  fmt::print(out, "{}: {}\n", split == data::Split::val ? "held out" : "training split", score_line(s));
}

}  // namespace tinygpt::analysis
