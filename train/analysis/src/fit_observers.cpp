#include "tinygpt/analysis/fit_observers.hpp"

#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/heads/formation.hpp"
#include "tinygpt/seq2seq/pair_eval.hpp"

namespace tinygpt::analysis {

nlohmann::json pair_record(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::Tokenizer& tokenizer, const std::string& task,
                           data::Split split, int64_t max_pairs) {
  const seq2seq::PairAccuracy accuracy = seq2seq::pair_accuracy(model, data, tokenizer, split, max_pairs);
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& h : seq2seq::cross_attention_alignment(model, data, tokenizer, task, split, max_pairs)) {
    heads.push_back({{"layer", h.layer}, {"head", h.head}, {"alignment", h.alignment}});
  }
  return {{"exact_match", accuracy.exact_match},
          {"char_accuracy", accuracy.char_accuracy},
          {"pairs", accuracy.pairs},
          {"cross_attention", heads}};
}

FormationObserver::FormationObserver(train::Run& run) {
  if (run.task().is<train::EncoderTask>()) {
    train::EncoderTask& task = run.task().as<train::EncoderTask>();
    encoder_probes_ = heads::encoder_probes(heads::dataset_probes(task.dataset(), run.tokenizer(), run.data_source()),
                                            run.tokenizer(), task.bert().config().max_position_embeddings);
    return;
  }
  if (!run.task().is<train::LanguageModelTask>()) return;
  train::LanguageModelTask& task = run.task().as<train::LanguageModelTask>();
  no_heads_ = heads::probe_obstacle(task.causal_lm().shape());
  if (no_heads_.empty()) probes_ = heads::dataset_probes(task.dataset(), run.tokenizer(), run.data_source());
}

nlohmann::json FormationObserver::eval_fields(train::Run& run) {
  if (encoder_probes_) {
    return heads::encoder_formation_record(run.task().as<train::EncoderTask>().bert(), *encoder_probes_);
  }
  if (probes_) {
    return heads::formation_record(run.task().as<train::LanguageModelTask>().causal_lm(), probes_->probes);
  }
  if (!run.task().is<train::PairTask>()) return nullptr;
  train::PairTask& task = run.task().as<train::PairTask>();
  return pair_record(task.encoder_decoder(), task.pairs(), run.tokenizer(), run.data_source(),
                     data::Split::val, kFormationPairs);
}

void StaleReportObserver::on_save(train::Run& run) {
  if (cleared_) return;
  remove_report(run.dir());
  cleared_ = true;
}

}  // namespace tinygpt::analysis
