#include "encoder_commands.hpp"

#include <algorithm>

#include "command_errors.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/train/masked_lm_eval.hpp"

namespace tinygpt::analysis {
namespace {

// The fixed masking an evaluation scores, so that two evaluations of one model agree.
constexpr uint64_t kEvalMaskingSeed = 0;
// The windows pseudo-perplexity reads: each costs a pass of its length rows, so a whole held-out
// split of a large text would take minutes.
constexpr int64_t kPseudoWindows = 256;

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

nlohmann::json EncoderCommands::heads(const HeadsRequest&) {
  throw ValueError(fmt::format("{} is an encoder: its heads are not scored yet", model_dir_));
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
