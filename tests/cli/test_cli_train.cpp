// tinygpt train end to end: a resumed run ends byte-identical to an uninterrupted one, resuming
// refuses what would break that, and a run whose numbers blow up stops and keeps its last good
// checkpoint.
#include <filesystem>
#include <functional>
#include <regex>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The files that make a run resumable, byte for byte, and its log without timings.
void check_same_run(const std::string& a, const std::string& b) {
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json",
                           "tokenizer.json", "trainer_state.json"}) {
    INFO(file);
    CHECK(read_bytes(a + "/" + file) == read_bytes(b + "/" + file));
  }
  CHECK(log_without_timing(a) == log_without_timing(b));
}

}  // namespace

TEST_CASE("train 40 then resume to 80 ends byte-identical to train 80", "[cli][resume]") {
  const std::string dropout = GENERATE("0", "0.1");  // 0.1 exercises the dropout generator
  INFO("--dropout " << dropout);
  ScratchDir dir;
  const std::string a = dir.file("a"), b = dir.file("b");
  const std::vector<std::string> run = concat(
      tiny_model_flags(), {"--lr-decay-steps", "80", "--eval-every", "10", "--dropout", dropout});

  run_ok(concat({"train", "--out", a, "--steps", "40"}, run));
  CHECK(saved_step(a) == 40);
  run_ok({"train", "--resume", a, "--steps", "80", "--threads", "1"});
  run_ok(concat({"train", "--out", b, "--steps", "80"}, run));
  CHECK(saved_step(a) == 80);
  check_same_run(a, b);
  CHECK(log_without_timing(a).size() == 80 + 8);  // a line per step and per evaluation
}

TEST_CASE("the command that started a run, with --resume added, continues it byte-identical",
          "[cli][resume]") {
  // A text file named relative to the working directory, and the run resumed from another one:
  // the run stores the file's absolute path, and the flag names the same file.
  ScratchDir dir;
  const std::string a = dir.file("a"), b = dir.file("b");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sees the dog " + std::to_string(i % 13) + ".\n";
  write_bytes(dir.file("text.txt"), text);
  fs::create_directory(dir.file("elsewhere"));
  const std::vector<std::string> run = concat(
      tiny_model_flags(), {"--lr-decay-steps", "60", "--eval-every", "10", "--dropout", "0.1",
                           "--lr", "0.01", "--min-lr", "0.001", "--seed", "5", "--force"});
  const auto command = [&](const std::string& data, const std::string& out,
                           const std::string& steps) {
    return concat({"train", "--data", data, "--out", out, "--steps", steps}, run);
  };
  const auto run_in = [](const std::string& cwd, const std::vector<std::string>& args) {
    const CliResult r = run_cli(args, {cwd});
    INFO(r.describe());
    REQUIRE(r.exited_with(0));
  };

  run_in(dir.file(""), command("text.txt", "a", "20"));
  SECTION("--steps changed in place") {
    run_in(dir.file("elsewhere"), concat(command("../text.txt", "../a", "60"), {"--resume", "../a"}));
  }
  SECTION("in two resumes, one of them from the same working directory") {
    run_in(dir.file(""), concat(command("text.txt", "a", "40"), {"--resume", "a"}));
    CHECK(saved_step(a) == 40);
    run_in(dir.file("elsewhere"), concat(command("../text.txt", "../a", "60"), {"--resume", a}));
  }
  CHECK(saved_step(a) == 60);
  run_in(dir.file(""), command(dir.file("text.txt"), b, "60"));
  check_same_run(a, b);
  CHECK(json::parse(read_bytes(a + "/trainer_state.json")).at("data_source") ==
        fs::canonical(dir.file("text.txt")).string());
}

TEST_CASE("resume still finds a run's data stored as a relative path (older runs)", "[cli][resume]") {
  ScratchDir dir;
  const std::string a = dir.file("a");
  write_bytes(dir.file("text.txt"), std::string(2000, 'x') + "the cat sees the dog.\n");
  run_ok(concat({"train", "--out", a, "--steps", "10", "--eval-every", "10", "--data",
                 dir.file("text.txt")}, tiny_model_flags()));
  json state = json::parse(read_bytes(a + "/trainer_state.json"));
  state["data_source"] = "text.txt";
  write_bytes(a + "/trainer_state.json", state.dump(2));
  fs::remove(a + "/checkpoint.json");  // those runs had no manifest of checksums either
  const CliResult r = run_cli({"train", "--resume", "a", "--steps", "20", "--data", "text.txt"},
                              {dir.file("")});
  INFO(r.describe());
  CHECK(r.exited_with(0));
  CHECK(saved_step(a) == 20);
}

TEST_CASE("resume refuses a flag the run keeps, and a --steps it has already reached",
          "[cli][resume][errors]") {
  ScratchDir dir;
  const std::string a = dir.file("a");
  run_ok(concat({"train", "--out", a, "--steps", "20", "--eval-every", "10"}, tiny_model_flags()));
  const DirSnapshot before = snapshot(a);

  SECTION("a different learning rate") {
    check_one_line_error(run_cli({"train", "--resume", a, "--steps", "40", "--lr", "0.01"}),
                         {"--lr 0.01 differs from the run's 0.02 in " + a, "keeps its own"});
  }
  SECTION("a different model width") {
    check_one_line_error(run_cli({"train", "--resume", a, "--steps", "40", "--d-model", "32"}),
                         {"--d-model 32 differs from the run's 16 in " + a});
  }
  SECTION("a different optimiser, dropout, seed or validation fraction") {
    check_one_line_error(run_cli({"train", "--resume", a, "--steps", "40", "--optimizer", "sgd"}),
                         {"--optimizer sgd differs from the run's adamw"});
    check_one_line_error(run_cli({"train", "--resume", a, "--steps", "40", "--dropout", "0.1"}),
                         {"--dropout 0.1 differs from the run's 0"});
    check_one_line_error(run_cli({"train", "--resume", a, "--steps", "40", "--seed", "7"}),
                         {"--seed 7 differs from the run's 1337"});
    check_one_line_error(
        run_cli({"train", "--resume", a, "--steps", "40", "--val-fraction", "0.2"}),
        {"--val-fraction 0.2 differs from the run's 0.1"});
  }
  SECTION("other data") {
    write_bytes(dir.file("other.txt"), "the cat sees the dog. the dog sees the cat.\n");
    check_one_line_error(
        run_cli({"train", "--resume", a, "--steps", "40", "--data", dir.file("other.txt")}),
        {"--data " + dir.file("other.txt") + " changed since the run started", "pass --force"});
  }
  SECTION("another --out") {
    check_one_line_error(
        run_cli({"train", "--resume", a, "--steps", "40", "--out", dir.file("b")}),
        {"--out", dir.file("b")});
    CHECK_FALSE(fs::exists(dir.file("b")));
  }
  SECTION("--steps equal to the saved step") {
    check_one_line_error(run_cli({"train", "--resume", a, "--steps", "20"}), {a, "step 20"});
  }
  SECTION("--steps below the saved step") {
    check_one_line_error(run_cli({"train", "--resume", a, "--steps", "5"}), {a, "step 20"});
  }
  SECTION("no --steps: the run's own total is reached") {
    check_one_line_error(run_cli({"train", "--resume", a}), {a, "step 20"});
  }
  SECTION("a directory with no run") {
    check_one_line_error(run_cli({"train", "--resume", dir.file("none"), "--steps", "40"}),
                         {dir.file("none")});
    CHECK_FALSE(fs::exists(dir.file("none")));
  }
  CHECK(snapshot(a) == before);
}

TEST_CASE("resume takes a new --steps, --eval-every and --eval-iters", "[cli][resume]") {
  ScratchDir dir;
  const std::string a = dir.file("a");
  train_tiny_model(a);
  run_ok({"train", "--resume", a, "--steps", "30", "--eval-every", "5", "--eval-iters", "3",
          "--threads", "1"});
  const json options = json::parse(read_bytes(a + "/trainer_state.json")).at("options");
  CHECK(options.at("steps") == 30);
  CHECK(options.at("eval_every") == 5);
  CHECK(options.at("eval_iters") == 3);
  CHECK(saved_step(a) == 30);
}

TEST_CASE("resume refuses a damaged run, naming the file", "[cli][resume][errors][checkpoint]") {
  ScratchDir dir;
  const std::string a = dir.file("a");
  train_tiny_model(a);
  fs::remove(a + "/checkpoint.json");  // unchecked, so the loader's own checks answer
  // Edits trainer_state.json as JSON.
  const auto edit_state = [&](const std::function<void(json&)>& edit) {
    json state = json::parse(read_bytes(a + "/trainer_state.json"));
    edit(state);
    write_bytes(a + "/trainer_state.json", state.dump(2));
  };
  std::vector<std::string> fragments = {a + "/trainer_state.json"};
  SECTION("trainer_state.json missing") {
    fs::remove(a + "/trainer_state.json");
    fragments = {a, "trainer_state.json"};
  }
  SECTION("trainer_state.json not JSON") { write_bytes(a + "/trainer_state.json", "{\"step\": 2"); }
  SECTION("an option missing") {
    edit_state([](json& s) { s["options"].erase("lr"); });
    fragments.push_back("'lr'");
  }
  SECTION("a negative step") {
    edit_state([](json& s) { s["step"] = -5; });
    fragments.push_back("step");
  }
  SECTION("a negative learning rate") {
    edit_state([](json& s) { s["options"]["lr"] = -1; });
    fragments.push_back("lr");
  }
  SECTION("a validation fraction of 5") {
    edit_state([](json& s) { s["val_fraction"] = 5; });
    fragments.push_back("val_fraction");
  }
  SECTION("a generator state that is not one") {
    edit_state([](json& s) { s["data_rng"] = "xyz"; });
    fragments.push_back("xyz");
  }
  SECTION("optimizer.safetensors of a wider model") {
    const std::string wider = dir.file("wider");
    train_tiny_model(wider, {"--d-model", "32"});
    fs::copy_file(wider + "/optimizer.safetensors", a + "/optimizer.safetensors",
                  fs::copy_options::overwrite_existing);
    fragments = {a + "/optimizer.safetensors", "transformer.wte.weight"};
  }
  const DirSnapshot before = snapshot(a);
  check_one_line_error(run_cli({"train", "--resume", a, "--steps", "40"}), fragments);
  CHECK(snapshot(a) == before);
}

TEST_CASE("a diverging run stops, says so, and keeps its last good checkpoint byte-identical",
          "[cli][checkpoint]") {
  // AdamW's decoupled weight decay scales the weight matrices by 1 - lr * weight_decay = -100
  // each step, whatever the gradients: from GPT-2's 0.02 they pass 1e18 by step 10 and the
  // forward pass overflows float (LayerNorm's variance) soon after, in any build. The steps
  // before are ordinary, so there are good checkpoints to keep.
  ScratchDir dir;
  const std::string run = dir.file("run"), reference = dir.file("reference");
  const std::vector<std::string> flags =
      concat(tiny_model_flags(), {"--lr", "1", "--min-lr", "0", "--warmup", "0", "--weight-decay",
                                  "101", "--lr-decay-steps", "100", "--eval-every", "3"});
  const CliResult r = run_cli(concat({"train", "--out", run, "--steps", "100"}, flags));
  INFO(r.describe());
  REQUIRE(r.exited());
  CHECK(r.exit_code != 0);
  const std::string last = r.err_lines().back();
  CHECK(std::regex_search(
      last, std::regex("^tinygpt: error: training diverged: (loss|gradient norm|evaluation loss) "
                       "is -?(nan|inf) (at|after) step [0-9]+; stopped")));

  // The checkpoint is the one the last evaluation before the blow-up wrote: the same run cut
  // off at that step gives the same bytes.
  const int64_t good = saved_step(run);
  REQUIRE(good >= 3);
  CHECK_THAT(last, Catch::Matchers::Contains(
                       "last good checkpoint (step " + std::to_string(good) + ") is kept in " + run));
  run_ok(concat({"train", "--out", reference, "--steps", std::to_string(good)}, flags));
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json", "tokenizer.json"}) {
    INFO(file);
    CHECK(read_bytes(run + "/" + file) == read_bytes(reference + "/" + file));
  }
  CHECK(log_without_timing(run) == log_without_timing(reference));
  // No staged or temporary file is left, and the checkpoint still works.
  CHECK(snapshot(run).size() == 8);  // with checkpoint.json and the run lock
  const CliResult eval = run_ok({"eval", "--model", run, "--data", "builtin:toy", "--json", "--threads", "1"});
  CHECK(std::isfinite(json::parse(eval.out).at("loss").get<double>()));
}

TEST_CASE("a run that diverges before its first checkpoint says it wrote none", "[cli][checkpoint]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  const CliResult r = run_cli(concat(
      {"train", "--out", run, "--steps", "20", "--eval-every", "1", "--lr", "1e30", "--min-lr", "0",
       "--warmup", "0", "--grad-clip", "0"},
      tiny_model_flags()));
  INFO(r.describe());
  REQUIRE(r.exited());
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err_lines().back(), Catch::Matchers::StartsWith("tinygpt: error: training diverged: ") &&
                                       Catch::Matchers::Contains("saved nothing in " + run));
  CHECK(snapshot(run).empty());
}

TEST_CASE("a warmup longer than the run is trained as asked, with one warning saying so",
          "[cli][train]") {
  ScratchDir dir;
  const CliResult longer = run_ok(tiny_train_args(dir.file("a"), {"--steps", "10", "--warmup", "40"}));
  CHECK_THAT(longer.err, Catch::Matchers::Contains(
                             "tinygpt: warning: --warmup 40 is longer than the run (--steps 10): "
                             "the learning rate stops at 0.25 of --lr"));
  const CliResult shorter = run_ok(tiny_train_args(dir.file("b"), {"--steps", "10", "--warmup", "5"}));
  CHECK(shorter.err.find("warning") == std::string::npos);
}

TEST_CASE("a byte-order mark at the start of the text is not a character of the vocabulary",
          "[cli][train]") {
  ScratchDir dir;
  const std::string text = dir.file("bom.txt"), run = dir.file("run");
  std::string body;
  for (int i = 0; i < 300; ++i) body += "ab cd.\n";
  write_bytes(text, "\xEF\xBB\xBF" + body);
  train_tiny_model(run, {"--data", text});
  const nlohmann::json vocab = nlohmann::json::parse(read_bytes(run + "/tokenizer.json"))["model"]["vocab"];
  CHECK(vocab.size() == 7);  // a b c d, space, '.', newline
  CHECK_FALSE(vocab.contains("\xEF\xBB\xBF"));
}
