// The rules every command's flags follow (issue 57): a flag given twice and a flag with an empty
// value are usage errors naming the flag, a value of the wrong form is one found before the model
// is loaded, and an allocation that fails names the flags of the command that ran.
#include <sys/resource.h>

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;

namespace {

// `args` run in an empty scratch folder (a default like runs/tinygpt would land there) failed as
// a usage error: exit 2, one line naming the command's help and every one of `fragments`, and
// nothing written.
CliResult check_usage_error(const std::vector<std::string>& args, const std::vector<std::string>& fragments) {
  const ScratchDir cwd;
  const CliResult r = run_cli(args, {cwd.file("")});
  INFO(r.describe());
  check_one_line_error(r, fragments);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("(see 'tinygpt " + args.front() + " --help')"));
  CHECK(cwd.entries().empty());
  return r;
}

}  // namespace

TEST_CASE("an empty value is refused for every path and text flag, before anything is created",
          "[cli][flag_rules]") {
  // A model that does not exist: the empty flag is found before any checkpoint is looked for.
  const std::string nope = "no-such-model";
  const std::vector<std::vector<std::string>> commands = {
      {"train", "--data", ""},
      {"train", "--out", ""},
      {"train", "--resume", ""},
      {"train", "--resume", "", "--force"},
      {"train", "--init-from", ""},
      {"sample", "--model", ""},
      {"sample", "--model", nope, "--prompt", ""},
      {"sample", "--model", nope, "--source", ""},
      {"eval", "--model", ""},
      {"eval", "--model", nope, "--data", ""},
      {"heads", "--model", ""},
      {"heads", "--model", nope, "--text", ""},
      {"heads", "--model", nope, "--out", ""},
      {"heads", "--model", nope, "--html", ""},
      {"bench", "--data", "", "--steps", "1"},
  };
  for (const auto& args : commands) {
    const auto empty = std::find(args.begin(), args.end(), "");
    check_usage_error(args, {*(empty - 1) + ": must not be empty"});
  }
  check_usage_error({"help", ""}, {"command: must not be empty"});
  // Flags with a number or a choice refuse it too, in their own check's words.
  check_usage_error({"train", "--steps", ""}, {"--steps", "got ''"});
  check_usage_error({"sample", "--model", nope, "--seed", ""}, {"--seed", "got ''"});
  check_usage_error({"eval", "--model", nope, "--split", ""}, {"--split"});
  check_usage_error({"bench", "--precision", ""}, {"--precision"});
}

TEST_CASE("an empty --resume, --data or --init-from with --force leaves runs/tinygpt as it was",
          "[cli][flag_rules]") {
  ScratchDir cwd;
  const std::string run = cwd.file("runs/tinygpt");
  std::filesystem::create_directory(cwd.file("runs"));
  train_tiny_model(run);
  const DirSnapshot before = snapshot(run);
  for (const char* flag : {"--resume", "--data", "--init-from"}) {
    const CliResult r = run_cli({"train", flag, "", "--force", "--steps", "5"}, {cwd.file("")});
    check_one_line_error(r, {std::string(flag) + ": must not be empty"});
    CHECK(r.exit_code == 2);
    CHECK(snapshot(run) == before);
  }
}

TEST_CASE("a flag given twice is refused in every command", "[cli][flag_rules]") {
  const std::string nope = "no-such-model";
  check_usage_error({"train", "--batch", "4", "--batch", "8"}, {"--batch: given 2 times (4, 8)"});
  check_usage_error({"train", "--steps", "10", "--steps", "20"}, {"--steps: given 2 times (10, 20)"});
  check_usage_error({"train", "--resume", "a", "--resume", "b"}, {"--resume: given 2 times (a, b)"});
  check_usage_error({"train", "--threads", "1", "--threads", "1"}, {"--threads: given 2 times"});
  check_usage_error({"train", "--force", "--steps", "1", "--force"}, {"--force: given 2 times"});
  check_usage_error({"sample", "--model", "a", "--model", "b"}, {"--model: given 2 times (a, b)"});
  check_usage_error({"sample", "--model", nope, "--tokens", "1", "--tokens", "2"}, {"--tokens: given 2 times"});
  check_usage_error({"sample", "--model", nope, "--json", "--json"}, {"--json: given 2 times"});
  check_usage_error({"eval", "--model", nope, "--batch", "1", "--batch", "2"}, {"--batch: given 2 times"});
  check_usage_error({"eval", "--model", nope, "--data", "x", "--data", "y"}, {"--data: given 2 times (x, y)"});
  check_usage_error({"heads", "--model", nope, "--ablate", "--ablate", "mean"}, {"--ablate: given 2 times"});
  check_usage_error({"heads", "--model", nope, "--text", "ab", "--text", "cd"}, {"--text: given 2 times"});
  check_usage_error({"bench", "--steps", "1", "--steps", "1"}, {"--steps: given 2 times (1, 1)"});
  check_usage_error({"bench", "--vocab", "5", "--vocab", "6"}, {"--vocab: given 2 times"});
}

TEST_CASE("a resumed run with --steps or --resume given twice is refused and left as it was",
          "[cli][flag_rules]") {
  ScratchDir dir;
  const std::string a = dir.file("a"), b = dir.file("b");
  train_tiny_model(a);
  train_tiny_model(b);
  const DirSnapshot before_a = snapshot(a), before_b = snapshot(b);
  // The command line that started the run, with a larger --steps added instead of replacing it.
  check_one_line_error(run_cli(concat(tiny_train_args(a), {"--resume", a, "--steps", "30"})),
                       {"--steps: given 2 times (20, 30)"});
  check_one_line_error(run_cli({"train", "--resume", a, "--resume", b, "--steps", "30"}),
                       {"--resume: given 2 times"});
  check_one_line_error(run_cli({"train", "--resume", a, "--steps", "30", "--force", "--force"}),
                       {"--force: given 2 times"});
  CHECK(snapshot(a) == before_a);
  CHECK(snapshot(b) == before_b);
  // With --steps changed in place it resumes.
  run_ok(with_flag(concat(tiny_train_args(a), {"--resume", a}), "--steps", "30"));
  CHECK(saved_step(a) == 30);
}

TEST_CASE("a malformed value is a usage error found before the model is loaded", "[cli][flag_rules]") {
  const std::string nope = "no-such-model";
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--ablate", "bogus"},
                                             {"--ablate", "ZERO"},
                                             {"--ablate-heads", "x"},
                                             {"--ablate-heads", "1."},
                                             {"--ablate-heads", "0.1,,1.0"},
                                             {"--ablate-heads", "0.1,0.1"},
                                             {"--ablate-heads", ""},
                                             {"--attribute", "0"},
                                             {"--pairs", "0"}}) {
    // The model was never looked for.
    CHECK_THAT(check_usage_error(concat({"heads", "--model", nope}, bad), {bad[0]}).err,
               !Catch::Contains(nope));
  }
  check_usage_error({"sample", "--model", nope, "--temperature", "warm"}, {"--temperature", "warm"});
  check_usage_error({"sample", "--model", nope, "--top-k", "-1"}, {"--top-k"});
  check_usage_error({"eval", "--model", nope, "--split", "test"}, {"--split", "test"});
  check_usage_error({"eval", "--model", nope, "--block", "x"}, {"--block", "'x'"});
  check_usage_error({"bench", "--precision", "f16"}, {"--precision", "f16"});
}

TEST_CASE("heads refuses a head the model lacks as a usage error, and --ablate still takes no value",
          "[cli][flag_rules]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);  // 1 layer of 2 heads
  for (const char* heads : {"1.0", "0.2", "0.0,0.5"}) {
    const CliResult r = run_cli({"heads", "--model", model, "--ablate-heads", heads, "--out", dir.file("pics")});
    check_one_line_error(r, {"--ablate-heads", "outside the model"});
    CHECK(r.exit_code == 2);
  }
  const CliResult each = run_ok({"heads", "--model", model, "--ablate", "--json", "--out", dir.file("pics")});
  CHECK(nlohmann::json::parse(each.out).at("heads").at(0).contains("ablated_second_copy_ratio"));
  CHECK(nlohmann::json::parse(run_ok({"heads", "--model", model, "--ablate-heads", "0.1", "--json",
                                      "--out", dir.file("pics")})
                                  .out)
            .at("ablation") == "zero");
}

// AddressSanitizer reserves terabytes of address space: no address-space limit runs under it.
#if defined(__SANITIZE_ADDRESS__)
#define TINYGPT_ADDRESS_SANITIZER
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang's spelling
#define TINYGPT_ADDRESS_SANITIZER
#endif
#endif

#ifndef TINYGPT_ADDRESS_SANITIZER
TEST_CASE("an allocation that fails names the flags of the command that ran", "[cli][flag_rules]") {
  // The child inherits an address-space limit far below the machine's memory: the estimate lets a
  // model that fits the machine through, and its allocation fails. (With less memory free the
  // estimate refuses it first, naming the same flags.)
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
  rlimit tight = old;
  tight.rlim_cur = rlim_t{2} << 30;
  const auto run_limited = [&](const std::vector<std::string>& args) {
    REQUIRE(setrlimit(RLIMIT_AS, &tight) == 0);
    CliProcess process(args);
    REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
    return process.finish();
  };
  // 2^22 characters of width 64: an embedding of 1 GiB.
  const CliResult bench = run_limited({"bench", "--vocab", "4194304", "--layers", "1", "--heads", "1",
                                       "--d-model", "64", "--block", "2", "--batch", "1", "--steps", "1",
                                       "--warmup", "0", "--threads", "1"});
  check_one_line_error(bench, {"--batch/--block (activations)", "--layers/--d-model/--vocab (model)"});
  CHECK(bench.exit_code == 1);
}
#endif
