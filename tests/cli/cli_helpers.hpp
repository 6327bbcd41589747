#pragma once
// What the CLI tests share: the flags of a model small enough to train in a blink, a snapshot of a
// directory's files to prove a failed command left it as it was, and the check that a command
// failed the way every tinygpt error must: an exit code (not a signal) and one line on stderr.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "file_bytes.hpp"
#include "run_cli.hpp"
#include "scratch_dir.hpp"

namespace tinygpt::testing {

// A 1-layer, 2-head, width-16, context-16 model: 20 steps on the toy corpus take ~0.1 s.
inline std::vector<std::string> tiny_model_flags() {
  return {"--layers", "1", "--heads", "2", "--d-model", "16", "--block", "16", "--batch", "4",
          "--eval-iters", "2", "--threads", "1"};
}

// `first` followed by `more`.
inline std::vector<std::string> concat(std::vector<std::string> first,
                                       const std::vector<std::string>& more) {
  first.insert(first.end(), more.begin(), more.end());
  return first;
}

// `args` with the value after `flag` replaced by `value` (appended if the flag is absent).
inline std::vector<std::string> with_flag(std::vector<std::string> args, const std::string& flag,
                                          const std::string& value) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) {
      args[i + 1] = value;
      return args;
    }
  }
  args.push_back(flag);
  args.push_back(value);
  return args;
}

// `args` with `changes`: flags with their values, each replacing the same flag's value or added,
// then flags with no value.
inline std::vector<std::string> with_changes(std::vector<std::string> args,
                                             const std::vector<std::string>& changes) {
  for (size_t i = 0; i < changes.size(); ++i) {
    const bool has_value = i + 1 < changes.size() && changes[i + 1].rfind("--", 0) != 0;
    args = has_value ? with_flag(args, changes[i], changes[i + 1]) : concat(args, {changes[i]});
    i += has_value ? 1 : 0;
  }
  return args;
}

// train --out <out> with the tiny model, 20 steps, a checkpoint every 10, with `changes`.
inline std::vector<std::string> tiny_train_args(const std::string& out,
                                                const std::vector<std::string>& changes = {}) {
  return with_changes(concat(concat({"train", "--out", out}, tiny_model_flags()),
                             {"--steps", "20", "--eval-every", "10"}),
                      changes);
}

// Runs tinygpt and requires that it exited with 0.
inline CliResult run_ok(const std::vector<std::string>& args) {
  CliResult r = run_cli(args);
  INFO(r.describe());
  REQUIRE(r.exited_with(0));
  return r;
}

// The path a load reads `name` of the checkpoint in `dir` from: the staged copy while a save that
// a kill interrupted after its commit record waits to be rolled forward, else the file itself
// (io/commit.hpp).
inline std::string committed_path(const std::string& dir, const std::string& name) {
  const std::string staged = dir + "/.tinygpt-staging/" + name;
  return std::filesystem::exists(dir + "/.tinygpt-commit.json") && std::filesystem::exists(staged)
             ? staged
             : dir + "/" + name;
}

// The step of the checkpoint in `dir` (from its trainer_state.json), also while a run saves:
// a commit finishing between the look for its staged copy and the read moves the file away, so
// a read that finds nothing looks again.
inline int64_t saved_step(const std::string& dir) {
  for (int attempt = 1;; ++attempt) {
    try {
      return nlohmann::json::parse(read_bytes(committed_path(dir, "trainer_state.json")))
          .at("step")
          .get<int64_t>();
    } catch (const std::runtime_error&) {
      if (attempt == 50) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// log.jsonl of the run in `dir`, one JSON object per step and per evaluation, without the
// timing field (tokens_per_s), which differs between runs.
inline std::vector<nlohmann::json> log_without_timing(const std::string& dir) {
  std::vector<nlohmann::json> entries;
  std::istringstream lines(read_bytes(dir + "/log.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    entries.push_back(nlohmann::json::parse(line));
    entries.back().erase("tokens_per_s");
  }
  return entries;
}

// Trains the tiny model into `out`, with `changes` as tiny_train_args takes them, and requires
// that it worked. The default model trains once per build of tinygpt and is copied after that (a
// run folder moves as a whole: nothing in it names its own path, and training is deterministic):
// a hundred cases start from it, each in a process of its own, and each training took 2 s under
// the sanitizers. The copy kept in the build directory is named by the binary's size and time,
// so a rebuilt tinygpt trains its own; two cases racing to train it both do, and one rename wins.
inline void train_tiny_model(const std::string& out, const std::vector<std::string>& changes = {}) {
  namespace fs = std::filesystem;
  if (!changes.empty() || fs::exists(out)) {
    run_ok(tiny_train_args(out, changes));
    return;
  }
  const fs::path binary = tinygpt_binary();
  const fs::path cache = fs::path(TINYGPT_BINARY_DIR) / "tests-cache";
  const fs::path trained =
      cache / ("tiny-" + std::to_string(fs::file_size(binary)) + "-" +
               std::to_string(static_cast<uint64_t>(fs::last_write_time(binary).time_since_epoch().count())));
  if (!fs::exists(trained)) {
    fs::create_directories(cache);
    const ScratchDir fresh(cache);
    run_ok(tiny_train_args(fresh.file("run")));
    std::error_code lost_the_race;
    fs::rename(fresh.file("run"), trained, lost_the_race);
  }
  fs::copy(trained, out, fs::copy_options::recursive);
}

// A 2-layer, 2-head, width-16, context-16 model trained 20 steps into `dir`/run (two layers: a
// later head can read an earlier one); the run's folder.
inline std::string two_layer_run(const ScratchDir& dir) {
  const std::string model = dir.file("run");
  const CliResult train = run_cli({"train", "--out", model, "--steps", "20", "--eval-every", "10",
                                   "--eval-iters", "1", "--layers", "2", "--heads", "2",
                                   "--d-model", "16", "--block", "16", "--batch", "2"});
  INFO(train.describe());
  REQUIRE(train.exited_with(0));
  return model;
}

// A small encoder-decoder on builtin:reverse (~2 s); `changes` replace or add flags with values.
inline std::vector<std::string> tiny_seq2seq_args(const std::string& out,
                                                  const std::vector<std::string>& changes = {}) {
  return with_changes({"train", "--arch", "encoder-decoder", "--out", out, "--layers", "1", "--heads", "2",
                       "--d-model", "32", "--block", "20", "--steps", "40", "--eval-every", "20",
                       "--batch", "16", "--eval-iters", "1", "--threads", "1"},
                      changes);
}

// Every file below a directory (relative path -> bytes); empty if it does not exist.
using DirSnapshot = std::map<std::string, std::string>;
inline DirSnapshot snapshot(const std::string& dir) {
  DirSnapshot files;
  if (!std::filesystem::exists(dir)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = std::filesystem::relative(entry.path(), dir).string();
    files[name] = entry.is_regular_file() ? read_bytes(entry.path().string()) : "<directory>";
  }
  return files;
}

// The names in a snapshot, for a readable failure message.
inline std::string names_of(const DirSnapshot& files) {
  std::string names;
  for (const auto& [name, bytes] : files) names += name + " ";
  return names;
}

// The command failed cleanly: it exited (no signal, no hang) with a non-zero code, printed
// nothing on stdout, and printed exactly one line on stderr, "tinygpt: error: ...", that holds
// every one of `fragments` (what identifies the problem: a flag, a path, a tensor name), in the
// user's terms (check_in_user_terms).
void check_one_line_error(const CliResult& r, const std::vector<std::string>& fragments);

// A CLI error speaks the user's language: it names no C++ class or function of the library
// ("CharTokenizer::encode: ", "read_text_file: ", "TextDataset: ") and no setting by its field
// name where a flag sets it ("block_size 64" is "--block 64", "val_fraction 0.1"
// "--val-fraction 0.1").
void check_in_user_terms(const std::string& line);

// The explorer page's data, as embedded by tinygpt::report (its browser behaviour is tested by
// tests/browser/explorer_test.js).
inline nlohmann::json explorer_data(const std::string& path) {
  const std::string html = read_bytes(path);
  const std::string open = "<script id=\"explorer-data\" type=\"application/json\">";
  const size_t start = html.find(open);
  REQUIRE(start != std::string::npos);
  const size_t end = html.find("</script>", start);
  return nlohmann::json::parse(html.substr(start + open.size(), end - start - open.size()));
}

}  // namespace tinygpt::testing
