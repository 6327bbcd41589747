#pragma once
// The model families the command line trains (--arch) and what each one decides: its model from
// the flags, the flags only it takes, its defaults, its data and what it refuses. families() is
// the one place that names them; a command asks the family instead of comparing --arch.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinygpt/train/task.hpp"

namespace tinygpt::cli {

// A family's own defaults for train's flags not given, where the GPT demo's do not suit its model
// (unset: the demo's stays).
struct FamilyDefaults {
  std::optional<int64_t> heads, d_model, block, steps, batch, warmup, eval_every, eval_iters;
  std::optional<double> lr, beta2;
};

struct Family {
  std::string arch;  // --arch's value, and the Task::kind() of the runs it starts
  std::string noun;  // the family in a message: "a GPT"
  // Its entry in train --arch's help; "{}" stands for its defaults' flags.
  std::string train_help;
  std::string bench_help;  // its entry in bench --arch's help
  std::string default_data;  // train --data when not given
  // Its vocabulary when it is its own ("its pairs' characters"); empty: it takes --tokenizer.
  std::string own_vocabulary;
  bool takes_init_from = false;
  // Of the flags that only some families take (model flags beyond the shape), those it takes.
  std::vector<std::string> own_flags;
  FamilyDefaults defaults;
  // bench: what it times instead of a text ("random pairs"; empty: it takes --data), the fewest
  // --block positions its steps need, and whether its steps have a FLOP estimate (MFU, and so
  // --peak-size).
  std::string bench_data_instead;
  int64_t bench_min_block = 1;
  bool reports_mfu = false;
  // The model `flags` give (`seed` draws a BigBird GPT's random key blocks), the refusal (in flag
  // terms) of a shape no vocabulary makes valid, and the flags that would give `task`'s model.
  train::ModelConfig (*model_config)(const ModelFlags& flags, uint64_t seed) = nullptr;
  void (*check_shape)(const ModelFlags& flags, const CLI::App& cmd) = nullptr;
  ModelFlags (*flags_of)(train::Task& task) = nullptr;

  // Refuses (UsageError, in flag terms) `flags` for this family: a flag on `cmd` that only other
  // families take, or a shape no vocabulary makes valid (e.g. --kv-heads 3 with --heads 2).
  void check(const ModelFlags& flags, const CLI::App& cmd) const;
  // The first half of check(): a flag on `cmd` that only other families take.
  void check_own_flags(const CLI::App& cmd) const;
};

// Every family, the default (--arch's default) first.
const std::vector<Family>& families();
const Family& default_family();
// The family of --arch `arch` (one of families(): CLI11 checks --arch against family_names()).
const Family& family(const std::string& arch);
// The family whose runs are `task`'s kind; the default family for a kind none of them names.
const Family& family_of(const train::Task& task);
std::vector<std::string> family_names();

}  // namespace tinygpt::cli
