// Runs a user can repair: a project moved with its text resumes when --data names the text's new
// place and its bytes are the recorded ones; eval, heads and resume say how to point at a text
// that is gone; a checkpoint's file named where its folder is expected says which folder.
#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;

namespace {

std::string some_text() {
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the cat sees a dog.\n";
  return text;
}

}  // namespace

TEST_CASE("a run whose project moved resumes from the text's new path when its bytes match",
          "[cli][hardening][resume]") {
  ScratchDir dir;
  const std::string project = dir.file("projA"), moved = dir.file("projB"), run = dir.file("run");
  fs::create_directories(project);
  write_bytes(project + "/data.txt", some_text());
  train_tiny_model(run, {"--data", project + "/data.txt"});
  fs::rename(project, moved);

  // Where the text was: the message says how to point at it.
  check_one_line_error(run_cli({"train", "--resume", run, "--steps", "30"}),
                       {project + "/data.txt' does not exist", "pass --data with its new path"});
  check_one_line_error(run_cli({"eval", "--model", run}), {"does not exist", "pass --data to read another"});
  check_one_line_error(run_cli({"heads", "--model", run}), {"does not exist", "pass --text to read another"});

  // The same bytes at the new place: resumed, said, and recorded for the next resume.
  const CliResult r = run_ok({"train", "--resume", run, "--steps", "30", "--data", moved + "/data.txt"});
  CHECK_THAT(r.err, Catch::Matchers::Contains("the run's text moved: " + project + "/data.txt -> " + moved +
                                              "/data.txt (its recorded size and SHA-256 match)"));
  CHECK(nlohmann::json::parse(read_bytes(run + "/trainer_state.json"))["data_source"] == moved + "/data.txt");
  run_ok({"train", "--resume", run, "--steps", "40"});

  // Other bytes at a new path: refused unless --force.
  write_bytes(dir.file("other.txt"), some_text() + "the dog sees a cat.\n");
  const DirSnapshot before = snapshot(run);
  check_one_line_error(run_cli({"train", "--resume", run, "--steps", "50", "--data", dir.file("other.txt")}),
                       {"changed since the run started", "--force"});
  CHECK(snapshot(run) == before);
  run_ok({"train", "--resume", run, "--steps", "50", "--data", dir.file("other.txt"), "--force"});
}

TEST_CASE("a checkpoint's file given where its folder is expected names the folder", "[cli][hardening]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"eval", "--model", run + "/model.safetensors"},
        std::vector<std::string>{"sample", "--model", run + "/config.json"},
        std::vector<std::string>{"heads", "--model", run + "/model.safetensors"},
        std::vector<std::string>{"train", "--resume", run + "/trainer_state.json", "--steps", "30"}}) {
    CAPTURE(args);
    check_one_line_error(run_cli(args), {args[2] + " is a file, not a", "(its folder is " + run + ")"});
  }
}

TEST_CASE("train --resume --force repairs a missing or damaged log, keeping its bytes aside",
          "[cli][hardening][resume]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  int64_t steps = 20;
  for (const std::string damage : {"emptied", "cut", "garbage", "missing"}) {
    CAPTURE(damage);
    const std::string log = read_bytes(run + "/log.jsonl");
    const std::string damaged = damage == "emptied" ? "" : damage == "cut" ? log.substr(0, log.size() / 2)
                                                                       : "not a log\n";
    if (damage == "missing") {
      fs::remove(run + "/log.jsonl");
    } else {
      write_bytes(run + "/log.jsonl", damaged);
    }
    for (const std::string aside : {"/log.jsonl.damaged", "/log.jsonl.damaged.1", "/log.jsonl.damaged.2"}) {
      fs::remove(run + aside);
    }
    // Without --force: refused, saying what --force would do, the folder as it was.
    const DirSnapshot before = snapshot(run);
    check_one_line_error(run_cli({"train", "--resume", run, "--steps", std::to_string(steps + 10)}),
                         {run + "/log.jsonl", "pass --force to resume with a new log"});
    CHECK(snapshot(run) == before);
    // With --force: resumed; the damaged bytes kept aside; a new log from the resumed step.
    const CliResult r = run_ok({"train", "--resume", run, "--steps", std::to_string(steps + 10), "--force"});
    CHECK_THAT(r.err, Catch::Matchers::Contains("a new log starts at step " + std::to_string(steps)));
    if (damage != "missing") CHECK(read_bytes(run + "/log.jsonl.damaged") == damaged);
    steps += 10;
    CHECK(saved_step(run) == steps);
    CHECK(log_without_timing(run).front()["step"] == steps - 9);
    run_ok({"train", "--resume", run, "--steps", std::to_string(steps + 1)});  // whole again
    steps += 1;
  }
}

TEST_CASE("eval and heads on a run whose text changed since it trained say so, for both architectures",
          "[cli][hardening]") {
  ScratchDir dir;
  const std::string text = dir.file("data.txt"), pairs = dir.file("pairs.tsv");
  write_bytes(text, some_text());
  std::string pair_lines;
  for (int i = 0; i < 40; ++i) pair_lines += std::string(1, static_cast<char>('a' + i % 7)) + "xy\tyx\n";
  write_bytes(pairs, pair_lines);
  const std::string gpt = dir.file("gpt"), seq2seq = dir.file("seq2seq");
  train_tiny_model(gpt, {"--data", text});
  run_ok(tiny_seq2seq_args(seq2seq, {"--data", pairs, "--steps", "2"}));
  const std::vector<std::vector<std::string>> commands = {
      {"eval", "--model", gpt}, {"heads", "--model", gpt, "--json"},
      {"eval", "--model", seq2seq}, {"heads", "--model", seq2seq, "--json"}};
  for (const auto& args : commands) {  // the text as it was: no note
    CAPTURE(args);
    CHECK(run_ok(args).err.empty());
  }
  write_bytes(text, some_text() + "the dog sees a cat.\n");
  write_bytes(pairs, pair_lines + "gxy\tyx\n");
  for (const auto& args : commands) {
    CAPTURE(args);
    const std::string source = args[2] == gpt ? text : pairs;
    const uint64_t was = args[2] == gpt ? some_text().size() : pair_lines.size();
    const CliResult r = run_ok(args);
    CHECK(r.err == "tinygpt: note: " + source + " changed since the run trained on it (" + std::to_string(was) +
                       " bytes then, " + std::to_string(read_bytes(source).size()) +
                       " now): the scores are on the text as it is now, not on the run's splits\n");
    CHECK_FALSE(r.out.empty());
  }
  // A change that makes the command fail: its one line says the text changed.
  write_bytes(text, some_text() + "Zebra\n");
  const std::string changed = " changed since the run trained on it (" + std::to_string(some_text().size()) +
                              " bytes then, " + std::to_string(read_bytes(text).size()) + " now)";
  for (const std::vector<std::string>& args : {commands[0], commands[1]}) {
    CAPTURE(args);
    const CliResult r = run_cli(args);
    check_one_line_error(r, {"'Z'", "; " + text + changed});
    CHECK(r.exited_with(1));
  }
  // A text shrunk below one window: the dataset's refusal in this command's terms. eval sets the
  // window with --block; heads has no such flag, the context is the model's.
  write_bytes(text, "the dog.\n");
  for (const std::vector<std::string>& args : {commands[0], commands[1]}) {
    CAPTURE(args);
    const CliResult r = run_cli(args);
    const bool eval = args[0] == "eval";
    check_one_line_error(r, {eval ? "--block " : "the model's context of ",
                             eval ? "--val-fraction 0.1" : "the run's validation share 0.1",
                             text + " changed since the run trained on it"});
    if (!eval) CHECK_THAT(r.err, !Catch::Matchers::Contains("use a longer text"));
    CHECK(r.exited_with(1));
  }
}
