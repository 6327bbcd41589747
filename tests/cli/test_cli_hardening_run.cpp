// A training run as a hostile but realistic user meets it (issue 15, phase B), through the real
// binary: a second run into a folder in use, signals, a folder that became read-only, shapes far
// beyond the machine's memory, a save that cannot be written, data changed under a run, a
// one-character corpus, and the log written a line at a time.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "process_helpers.hpp"
#include "io/file_size_limit.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("a second train into a folder in use is refused at once, and the first goes on and loads",
          "[cli][hardening][lock][slow]") {
  ScratchDir dir;
  const std::string out = dir.file("run");
  CliProcess first(long_run(out, 1'000'000, 1'000'000));
  wait_for_first_step(first, out);
  // The log is written a line at a time: steps are there long before the first checkpoint.
  CHECK_FALSE(fs::exists(out + "/checkpoint.json"));
  const size_t early = lines_in(out + "/log.jsonl");
  for (const auto& args :
       {tiny_train_args(out), tiny_train_args(out, {"--force"}),
        std::vector<std::string>{"train", "--resume", out, "--steps", "2000000"}}) {
    const CliResult second = run_cli(args);
    check_one_line_error(second, {out, "is in use by another training run (pid " +
                                           std::to_string(first.pid()) + ")"});
  }
  CHECK(wait_until([&] { return lines_in(out + "/log.jsonl") > early; }));  // it goes on
  CHECK_FALSE(fs::exists(out + "/checkpoint.json"));
  // Nothing of the second runs is there: only the first's lock and live log.
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(out)) names.insert(entry.path().filename().string());
  CHECK(names == std::set<std::string>{".tinygpt-run.lock", "log.jsonl"});

  first.send_signal(SIGINT);  // it saves, and the checkpoint loads
  const CliResult ended = first.finish();
  INFO(ended.describe());
  REQUIRE(ended.exited_with(130));
  run_ok({"sample", "--model", out, "--tokens", "10"});
  // Free again: it resumes.
  run_ok({"train", "--resume", out, "--steps", std::to_string(saved_step(out) + 5), "--threads", "1"});
}

TEST_CASE("SIGINT saves at the step it ends, and the resumed run equals one never interrupted",
          "[cli][hardening][signals][slow]") {
  constexpr int64_t kSteps = 20'000;
  ScratchDir dir;
  const std::string out = dir.file("run"), reference = dir.file("reference");
  CliProcess trainer(long_run(out, kSteps, 5'000));
  wait_for_first_step(trainer, out);
  trainer.send_signal(SIGINT);
  const CliResult r = trainer.finish();
  INFO(r.describe());
  if (r.exited_with(0)) {
    WARN("the run finished before the signal: nothing was tested");
    return;
  }
  REQUIRE(r.exited_with(130));
  const int64_t step = saved_step(out);
  CHECK(step < kSteps);
  const std::vector<std::string> lines = r.err_lines();
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.back() == "tinygpt: interrupted at step " + std::to_string(step) +
                            "; checkpoint saved in " + out + "; resume with: tinygpt train --resume " + out);
  CHECK(static_cast<int64_t>(log_without_timing(out).size()) == step + step / 5'000);
  run_ok({"train", "--resume", out, "--threads", "1"});
  run_ok(long_run(reference, kSteps, 5'000));
  CHECK(read_bytes(out + "/model.safetensors") == read_bytes(reference + "/model.safetensors"));
  CHECK(read_bytes(out + "/optimizer.safetensors") == read_bytes(reference + "/optimizer.safetensors"));
  CHECK(log_without_timing(out) == log_without_timing(reference));
}

TEST_CASE("SIGTERM exits 143, twice at once too, and a second signal during the save kills at once and the folder loads",
          "[cli][hardening][signals][slow]") {
  ScratchDir dir;
  const std::string out = dir.file("run");
  {
    CliProcess trainer(long_run(out, 1'000'000, 1'000'000));
    wait_for_first_step(trainer, out);
    trainer.send_signal(SIGTERM);
    const CliResult r = trainer.finish();
    INFO(r.describe());
    CHECK(r.exited_with(143));
    CHECK_THAT(r.err, Catch::Matchers::Contains("checkpoint saved in " + out));
  }
  // The same signal twice at once is one request (`timeout` signals the process and its group):
  // the run saves and exits as for one, every time.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int64_t before = saved_step(out);
    const size_t logged = lines_in(out + "/log.jsonl");
    CliProcess trainer({"train", "--resume", out, "--steps", "1000000", "--eval-every", "1000000",
                        "--threads", "1"});
    REQUIRE(wait_until([&] { return lines_in(out + "/log.jsonl") > logged; }));  // a step
    trainer.send_signal(SIGTERM);
    trainer.send_signal(SIGTERM);
    const CliResult r = trainer.finish();
    INFO(r.describe());
    CHECK(r.exited_with(143));
    CHECK(saved_step(out) > before);
  }
  // Checkpointing every step, SIGINT then at once SIGINT again (the same request: it saves), or
  // SIGKILL; each time the last checkpoint loads and resumes.
  for (const int second : {SIGINT, SIGKILL}) {
    CAPTURE(second);
    const int64_t before = saved_step(out);
    CliProcess trainer({"train", "--resume", out, "--steps", "1000000", "--eval-every", "1",
                        "--threads", "1"});
    REQUIRE(wait_until([&] { return saved_step(out) > before; }));
    trainer.send_signal(SIGINT);
    trainer.send_signal(second);
    const CliResult r = trainer.finish();
    INFO(r.describe());
    CHECK((r.signal == second || r.exited_with(130)));
    run_ok({"eval", "--model", out, "--data", "builtin:toy", "--threads", "1"});
    run_ok({"train", "--resume", out, "--steps", std::to_string(saved_step(out) + 3), "--threads", "1"});
  }
}

TEST_CASE("under timeout (SIGTERM to the process and to its group) train saves every time",
          "[cli][hardening][signals][slow]") {
  if (std::system("timeout --version > /dev/null 2>&1") != 0) {
    WARN("skipped: no timeout command");
    return;
  }
  ScratchDir dir;
  for (int attempt = 0; attempt < 6; ++attempt) {
    CAPTURE(attempt);
    const std::string out = dir.file("run" + std::to_string(attempt)), err = dir.file("err");
    std::string command = "timeout --preserve-status 1.5 " + tinygpt_binary();
    for (const std::string& arg : long_run(out, 1'000'000, 1'000'000)) command += " '" + arg + "'";
    const int status = std::system((command + " > /dev/null 2> '" + err + "'").c_str());
    const std::string said = read_bytes(err);
    INFO(said);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 143);
    if (said.find("interrupted before the first step") != std::string::npos) {
      CHECK_FALSE(fs::exists(out));  // nothing was saved, nothing is left
      continue;
    }
    CHECK_THAT(said, Catch::Matchers::Contains("checkpoint saved in " + out));
    run_ok({"sample", "--model", out, "--tokens", "5"});
  }
}

TEST_CASE("resume into a folder it cannot write fails before training, naming the folder",
          "[cli][hardening]") {
  ScratchDir dir;
  const std::string out = dir.file("run");
  train_tiny_model(out);
  const DirSnapshot before = snapshot(out);
  if (::geteuid() != 0) {
    fs::permissions(out, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                    fs::perm_options::remove);
    const CliResult r = run_cli({"train", "--resume", out, "--steps", "40"});
    fs::permissions(out, fs::perms::owner_write, fs::perm_options::add);
    check_one_line_error(r, {"cannot write in directory " + out});
  } else {
    // Root ignores permissions: the same binary as an unprivileged user (setpriv, util-linux),
    // on a folder it may read but not write.
    if (std::system("setpriv --version > /dev/null 2>&1") != 0) {
      WARN("skipped: running as root without setpriv, permissions do not bind");
      return;
    }
    fs::permissions(dir.file(""), fs::perms::all, fs::perm_options::replace);  // mkdtemp made it 0700
    const std::string err = dir.file("err.txt");
    const std::string command = "setpriv --reuid=65534 --regid=65534 --clear-groups '" +
                                tinygpt_binary() + "' train --resume '" + out +
                                "' --steps 40 > /dev/null 2> '" + err + "'";
    const int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127) {
      WARN("skipped: the unprivileged user cannot run " + tinygpt_binary());
      return;
    }
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(read_bytes(err) == "tinygpt: error: cannot write in directory " + out + ": Permission denied\n");
  }
  CHECK(snapshot(out) == before);
}

// A full disk, or here a file size limit the child inherits (writes past it fail with EFBIG),
// stops a save halfway: the run's last checkpoint stays as it was and the message says so.
TEST_CASE("a save that cannot be written keeps the last checkpoint, and says which", "[cli][hardening]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), fresh = dir.file("fresh");
  train_tiny_model(run);  // checkpoints at steps 10 and 20
  DirSnapshot before = snapshot(run);
  // train's progress lines come first on stderr; the error is the last line.
  const auto check_ends_in_error = [](const CliResult& r, const std::string& error) {
    INFO(r.describe());
    CHECK(r.exit_code == 1);
    REQUIRE_FALSE(r.err_lines().empty());
    CHECK(r.err_lines().back() == "tinygpt: error: " + error);
  };
  {
    const FileSizeLimit limit(10000);  // below model.safetensors, above the log
    check_ends_in_error(run_cli({"train", "--resume", run, "--steps", "30", "--threads", "1"}),
                        "saving step 30 failed: cannot write '" + run + "/.tinygpt-staging/model.safetensors': "
                        "File too large; the checkpoint of step 20 in " + run + " is intact");
    check_ends_in_error(run_cli(tiny_train_args(fresh)),
                        "saving step 10 failed: cannot write '" + fresh + "/.tinygpt-staging/model.safetensors': "
                        "File too large; the run saved nothing in " + fresh);
  }
  CHECK_FALSE(fs::exists(fresh));
  DirSnapshot after = snapshot(run);
  CHECK(after.at("log.jsonl").rfind(before.at("log.jsonl"), 0) == 0);  // the steps since, written as they ran
  before.erase("log.jsonl");
  after.erase("log.jsonl");
  CHECK(after == before);
  run_ok({"train", "--resume", run, "--steps", "30", "--threads", "1"});
}

TEST_CASE("a shape far beyond the machine's memory is refused before allocating, naming the flags",
          "[cli][hardening][memory]") {
  ScratchDir dir;
  const std::string out = dir.file("X");
  const std::vector<std::string> huge = {"--layers", "64", "--d-model", "8192", "--block", "65536"};
  const CliOptions quick{{}, false, std::chrono::milliseconds(20'000)};
  for (const char* arch : {"gpt", "encoder-decoder", "encoder"}) {
    CAPTURE(arch);
    // Each command names its own flags: bench's synthetic vocabulary sizes its model too.
    for (const auto& [args, model_flags] :
         {std::pair{concat({"train", "--arch", arch, "--out", out}, huge), "--layers/--d-model (model)"},
          std::pair{concat({"bench", "--arch", arch, "--steps", "1"}, huge), "--layers/--d-model/--vocab (model)"}}) {
      const CliResult r = run_cli(args, quick);
      check_one_line_error(r, {"this run needs about", "GiB available",
                               std::string("lower --batch/--block (activations) or ") + model_flags});
      CHECK(r.exited_with(1));
    }
  }
  CHECK_FALSE(fs::exists(out));
  CHECK(dir.entries().empty());
}

TEST_CASE("eval refuses a batch far beyond the machine's memory before it allocates, naming the flags",
          "[cli][hardening][memory]") {
  ScratchDir dir;
  const CliOptions quick{{}, false, std::chrono::milliseconds(20'000)};
  SECTION("a GPT: windows of --block characters, --batch of them at once") {
    // 8 MB of text in windows of 65536: ~120 windows of a width-512 model, ~390 GB at once.
    const std::string data = dir.file("big.txt"), out = dir.file("run");
    std::string text;
    while (text.size() < (8u << 20)) text += "the cat sat on the mat. ";
    write_bytes(data, text);
    train_tiny_model(out, {"--data", data, "--pos", "rope", "--d-model", "512", "--heads", "4", "--steps", "2"});
    const CliResult r = run_cli({"eval", "--model", out, "--block", "65536", "--batch", "65536"}, quick);
    check_one_line_error(r, {"this needs about", "GiB of activations but the machine has",
                             "GiB available; lower --batch/--block"});
    CHECK(r.exited_with(1));
    // --batch counts only the windows there are: on a short text it fits.
    const std::string small = dir.file("small.txt");
    write_bytes(small, text.substr(0, 4000));
    run_ok({"eval", "--model", out, "--data", small, "--block", "64", "--batch", "65536"});
  }
  SECTION("an encoder-decoder: pairs of up to --block positions, --batch of them at once") {
    // 1000 pairs of 2000 characters: ~400 MB each through 8 heads' (P,P) maps.
    const std::string pairs = dir.file("long.tsv"), out = dir.file("run");
    std::string text;
    for (int i = 0; i < 1000; ++i) text += std::string(2000, 'a' + i % 26) + '\t' + std::string(2000, 'b') + '\n';
    write_bytes(pairs, text);
    // Trained on ten short pairs, so that its closing greedy decoding of one held-out pair is quick.
    const std::string few = dir.file("few.tsv");
    std::string lines;
    for (int i = 0; i < 10; ++i) lines += "abcdefghijklmnopqrstuvwxyz\tzyxwvutsrqponmlkjihgfedcba\n";
    write_bytes(few, lines);
    run_ok(tiny_seq2seq_args(out, {"--data", few, "--heads", "8", "--d-model", "64", "--block", "2048",
                                   "--batch", "2", "--steps", "2"}));
    const CliResult r = run_cli({"eval", "--model", out, "--data", pairs, "--split", "all", "--batch", "65536"}, quick);
    check_one_line_error(r, {"this needs about", "GiB of activations but the machine has", "GiB available; lower --batch"});
    CHECK(r.exited_with(1));
  }
}

TEST_CASE("resuming on data that changed is refused unless --force, and older runs resume as before",
          "[cli][hardening][data]") {
  ScratchDir dir;
  const std::string data = dir.file("text.txt"), out = dir.file("run");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sat on the mat. ";
  write_bytes(data, text);
  train_tiny_model(out, {"--data", data});
  const json state = json::parse(read_bytes(out + "/trainer_state.json"));
  CHECK(state.at("data_bytes") == text.size());
  CHECK(state.at("data_sha256").get<std::string>().size() == 64);

  write_bytes(data, text + "the mat sat on the cat. ");
  const DirSnapshot before = snapshot(out);
  check_one_line_error(run_cli({"train", "--resume", out, "--steps", "30"}),
                       {"--data " + data + " changed since the run started (" +
                            std::to_string(text.size()) + " bytes, sha256 " +
                            state.at("data_sha256").get<std::string>().substr(0, 12),
                        "pass --force to resume on it anyway"});
  CHECK(snapshot(out) == before);
  run_ok({"train", "--resume", out, "--steps", "30", "--force", "--threads", "1"});
  CHECK(json::parse(read_bytes(out + "/trainer_state.json")).at("data_bytes") == text.size() + 24);

  // A run saved before the record existed: no fields, no manifest (as that tinygpt wrote it).
  json old_state = json::parse(read_bytes(out + "/trainer_state.json"));
  old_state.erase("data_bytes");
  old_state.erase("data_sha256");
  write_bytes(out + "/trainer_state.json", old_state.dump(2));
  fs::remove(out + "/checkpoint.json");
  write_bytes(data, text);
  run_ok({"train", "--resume", out, "--steps", "40", "--threads", "1"});
}

TEST_CASE("a corpus of one distinct character trains, and the head analysis is skipped with a message",
          "[cli][hardening][heads]") {
  ScratchDir dir;
  const std::string data = dir.file("a.txt"), out = dir.file("run");
  write_bytes(data, std::string(3000, 'a'));
  const CliResult r = run_ok(tiny_train_args(out, {"--data", data}));
  CHECK_THAT(r.err, Catch::Matchers::Contains("vocabulary of 1 character: no head analysis"));
  CHECK(saved_step(out) == 20);
  check_one_line_error(run_cli({"heads", "--model", out}),
                       {out, "vocabulary of 1 character: no head analysis"});
}
