// tinygpt completion bash: the script, sourced in a real bash, completes commands, flags, the
// words of a flag with choices and paths where a flag takes one, from the commands' own flags.
#include <cstdio>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

namespace {

// What the completion function offers for the words of a command line (the last one is the
// word being completed), in a bash that sourced `script`.
std::string complete(const std::string& script, const std::string& words) {
  // compopt only works inside a completion that bash itself started.
  const std::string command = "bash -c 'source " + script +
                              "; compopt() { :; }; COMP_WORDS=(" + words +
                              "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tinygpt; "
                              "echo \"${COMPREPLY[*]}\"' 2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  REQUIRE(pclose(pipe) == 0);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("the bash completion offers commands, flags, choices and paths", "[cli][completion]") {
  ScratchDir dir;
  const std::string script = dir.file("tinygpt.bash");
  write_bytes(script, run_ok({"completion", "bash"}).out);
  CHECK(complete(script, "tinygpt \"\"") ==
        "train sample eval fill heads bench tokenizer prune memory chart help completion --help --version");
  CHECK(complete(script, "tinygpt sa") == "sample");
  CHECK(complete(script, "tinygpt fill --top") == "--top-k");
  CHECK(complete(script, "tinygpt train --mask") == "--mask-prob");
  CHECK(complete(script, "tinygpt heads --mask") == "--mask-view");
  CHECK(complete(script, "tinygpt train --init") == "--init-from");
  CHECK(complete(script, "tinygpt train --keep") == "--keep-best");
  CHECK(complete(script, "tinygpt train --pos \"\"") == "learned sinusoidal rope alibi none");
  CHECK(complete(script, "tinygpt eval --model m --split t") == "train");
  CHECK(complete(script, "tinygpt heads --ablate m") == "mean");
  CHECK(complete(script, "tinygpt heads --ablate --js") == "--json");  // its value is optional
  CHECK(complete(script, "tinygpt sample --model m --j") == "--json");
  CHECK(complete(script, "tinygpt train --layers \"\"").empty());  // a number: nothing to offer
  CHECK(complete(script, "tinygpt help \"\"") == "train sample eval fill heads bench tokenizer prune memory chart help completion");
  CHECK(complete(script, "tinygpt completion \"\"") == "bash");
  // A directory for --model, a file for --data.
  std::filesystem::create_directories(dir.file("run_one"));
  write_bytes(dir.file("text_one.txt"), "x");
  CHECK(complete(script, "tinygpt sample --model " + dir.file("run_")) == dir.file("run_one"));
  CHECK(complete(script, "tinygpt sample --model " + dir.file("text_")).empty());
  CHECK(complete(script, "tinygpt train --data " + dir.file("text_")) == dir.file("text_one.txt"));
}

TEST_CASE("tinygpt completion refuses a shell it does not know", "[cli][completion][exit]") {
  const CliResult r = run_cli({"completion", "fish"});
  check_one_line_error(r, {"tinygpt completion --help"});
  CHECK(r.exited_with(2));
}
