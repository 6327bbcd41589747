#pragma once
// What a trained run shows. `tinygpt train` ends with report_run; `tinygpt heads` calls
// report_heads on a checkpoint (with its own probes, ablation and output choices).
#include <cstdio>
#include <functional>
#include <string>

#include "tinygpt/analysis/heatmap_set.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/probe_set.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/train/log_records.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::analysis {

// Where the head report goes.
struct ReportOptions {
  std::string heatmap_dir;  // one PNG per head and a grid per layer ("" for none)
  bool json = false;        // the caller prints JSON: no table
  std::string html;         // the attention explorer page ("" for none)
  std::string run_dir;      // the run whose log.jsonl the page draws (may have none)
  const heads::EachHeadAblation* ablation = nullptr;  // its table follows the role table
  std::FILE* text = stdout;  // where the tables and paths are printed (stderr under train --json)
  std::function<void(HeatmapSet&)> draw_also;  // more pictures of the same set (heads --attribute)
};

// The role table (and the ablation table), one heatmap per head, a grid per layer, the explorer
// page, and on a terminal a shaded preview of the strongest head; returns the report.
heads::HeadReport report_heads(nn::CausalLM& model, const data::Tokenizer& tokenizer,
                               const heads::ProbeSet& set, const ReportOptions& out);

// <run_dir>/loss.png from the log's losses and, when evaluations scored the heads,
// <run_dir>/heads_over_time.png and when each head reached its role (printed to `text`, or not
// at all when it is null).
void draw_training_curves(const train::LogRecords& log, const std::string& run_dir,
                          const std::string& title, std::FILE* text = stdout);

// The heatmaps' folder in a run's folder: <run_dir>/heads.
inline constexpr const char* kHeatmapDir = "heads";

// The end-of-run report of `run_dir` (report.html and the heatmaps) removed: once a run has
// saved a checkpoint it no longer describes (a run it replaced, or an earlier step it resumed).
void remove_report(const std::string& run_dir);

// Before a run trains: IOError if the report's folder in `run_dir` is a symbolic link (the
// pictures would be written through it, outside the run's folder) or not a folder, or if a
// folder is where the run's page or curves go (its end would fail after the training).
void check_report_paths(const std::string& run_dir);

// The run's loss curve and heads-over-time plot (draw_training_curves) from its log so far.
void draw_run_curves(train::Run& run, std::FILE* text = stdout);

// The end of a language model's training run: the curves, then (with `probes`, the run's own, as
// its evaluations used them) report_heads into <dir>/heads and <dir>/report.html, with each head
// removed in turn for a GPT (ablation needs its hooks; other models' pages have no ablation).
// What it prints goes to `text`.
void report_run(train::Run& run, const heads::ProbeSet* probes, std::FILE* text = stdout);

}  // namespace tinygpt::analysis
