// Bad input to the real tinygpt binary: every case must end with a non-zero exit code (never a
// signal), one "tinygpt: error: ..." line on stderr naming the culprit, and no file written or
// changed: neither a new --out directory nor a byte of an existing checkpoint.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/version.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;

namespace {

// Runs `train` with the tiny model's flags changed by `changes` (flag, value pairs) and checks
// the one-line error holding `fragments`, twice: into an --out that does not exist yet (it must
// still not exist), and with --force into a directory holding a checkpoint (it must be intact:
// every check runs before anything is written).
void check_train_refuses(const std::vector<std::pair<std::string, std::string>>& changes,
                         const std::vector<std::string>& fragments) {
  ScratchDir dir;
  const std::string fresh = dir.file("fresh"), existing = dir.file("existing");
  train_tiny_model(existing);
  const DirSnapshot before = snapshot(existing);
  std::vector<std::string> args = tiny_train_args(fresh);
  for (const auto& [flag, value] : changes) args = with_flag(args, flag, value);

  check_one_line_error(run_cli(args, {dir.file(""), false}), fragments);
  CHECK_FALSE(fs::exists(fresh));

  args = with_flag(args, "--out", existing);
  args.push_back("--force");
  check_one_line_error(run_cli(args), fragments);
  CHECK(snapshot(existing) == before);
  CHECK(dir.entries() == std::set<std::string>{"existing"});
}

// A trained checkpoint in `dir`/model that `damage` then breaks; sample, eval and heads must
// each refuse it with one line holding `fragments`, and leave the directory as they found it.
template <class Damage>
void check_model_commands_refuse(Damage&& damage, const std::vector<std::string>& fragments) {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  damage(model);
  // Without its manifest the folder is read as one another tool wrote: unchecked, so that the
  // loader's own checks of each file are what answers (with it, any edit is a checksum error).
  std::filesystem::remove(model + "/checkpoint.json");
  const DirSnapshot before = snapshot(model);
  const std::vector<std::vector<std::string>> commands = {
      {"sample", "--model", model, "--tokens", "5"},
      {"eval", "--model", model, "--data", "builtin:toy", "--threads", "1"},
      {"heads", "--model", model, "--threads", "1"},
  };
  for (const auto& command : commands) {
    INFO(command[0]);
    check_one_line_error(run_cli(command), fragments);
    CHECK(snapshot(model) == before);
  }
}

// A damage for check_model_commands_refuse: `from` replaced by `to` in the text of `file`.
auto replacing(const std::string& file, const std::string& from, const std::string& to) {
  return [=](const std::string& model) {
    std::string text = read_bytes(model + "/" + file);
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    write_bytes(model + "/" + file, text.replace(at, from.size(), to));
  };
}

// A damage for check_model_commands_refuse: replaces `file` of the checkpoint with the one of a
// wider model (d_model 32 instead of 16), so config.json and model.safetensors disagree.
auto file_of_wider_model(const std::string& file) {
  return [file](const std::string& model) {
    const std::string wider = model + "-wider";
    train_tiny_model(wider, {"--d-model", "32"});
    fs::copy_file(wider + "/" + file, model + "/" + file, fs::copy_options::overwrite_existing);
    fs::remove_all(wider);
  };
}

}  // namespace

TEST_CASE("help on the top level and every subcommand exits 0 and prints usage", "[cli]") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"train", "--help"}, {"sample", "--help"},
        {"eval", "--help"}, {"heads", "--help"}, {"-h"}}) {
    CliOptions closed_stdin;
    closed_stdin.close_stdin = true;
    const CliResult r = run_cli(args, closed_stdin);
    INFO(r.describe());
    CHECK(r.exited_with(0));
    CHECK_THAT(r.out, Catch::Matchers::Contains("Usage:"));
    CHECK(r.err.empty());
    if (args.size() == 2) CHECK_THAT(r.out, Catch::Matchers::Contains(args[0]));
  }
}

TEST_CASE("tinygpt --version prints the project version and exits 0", "[cli]") {
  const CliResult r = run_cli({"--version"});
  INFO(r.describe());
  CHECK(r.exited_with(0));
  CHECK(r.out == "tinygpt " TINYGPT_VERSION "\n");
  CHECK(std::string(TINYGPT_VERSION) == "0.2.0");
  CHECK(r.err.empty());
}

TEST_CASE("train --help ends with the toy corpus, wrapped to the terminal", "[cli]") {
  const CliResult r = run_cli({"train", "--help"});
  INFO(r.describe());
  const size_t footer = r.out.find("The built-in toy corpus is generated from a seed");
  REQUIRE(footer != std::string::npos);
  std::istringstream lines(r.out.substr(footer));
  int64_t count = 0;
  for (std::string line; std::getline(lines, line); ++count) CHECK(line.size() <= 96);
  CHECK(count > 3);
}

TEST_CASE("no subcommand, an unknown one or an unknown flag before it is one error line naming it",
          "[cli][errors]") {
  ScratchDir dir;
  const CliOptions in_dir{dir.file(""), false};
  SECTION("unknown subcommand") {
    check_one_line_error(run_cli({"bogus", "--out", "x"}, in_dir), {"bogus", "train"});
  }
  SECTION("misspelt subcommand") {
    check_one_line_error(run_cli({"trian"}, in_dir), {"trian"});
  }
  SECTION("no arguments at all") { check_one_line_error(run_cli({}, in_dir), {"subcommand"}); }
  SECTION("a flag before the subcommand") {
    check_one_line_error(run_cli({"--bogus", "train"}, in_dir), {"--bogus"});
  }
  CHECK(dir.entries().empty());
}

TEST_CASE("train refuses bad flags before it writes anything", "[cli][errors]") {
  SECTION("unknown flag") { check_train_refuses({{"--bogus", "1"}}, {"--bogus"}); }
  SECTION("non-numeric integer") { check_train_refuses({{"--layers", "x"}}, {"--layers", "x"}); }
  SECTION("fractional integer") { check_train_refuses({{"--steps", "1.5"}}, {"--steps", "1.5"}); }
  SECTION("non-numeric number") { check_train_refuses({{"--lr", "fast"}}, {"--lr", "fast"}); }
  SECTION("zero layers") { check_train_refuses({{"--layers", "0"}}, {"--layers"}); }
  SECTION("negative batch") { check_train_refuses({{"--batch", "-1"}}, {"--batch", "-1"}); }
  SECTION("zero block") { check_train_refuses({{"--block", "0"}}, {"--block"}); }
  SECTION("zero steps") { check_train_refuses({{"--steps", "0"}}, {"--steps"}); }
  SECTION("heads not dividing d-model") {
    check_train_refuses({{"--heads", "3"}}, {"--d-model 16", "--heads 3"});
  }
  SECTION("dropout of 1") { check_train_refuses({{"--dropout", "1"}}, {"--dropout"}); }
  SECTION("negative dropout") { check_train_refuses({{"--dropout", "-0.1"}}, {"--dropout"}); }
  SECTION("zero learning rate") { check_train_refuses({{"--lr", "0"}}, {"--lr", "0"}); }
  SECTION("negative learning rate") { check_train_refuses({{"--lr", "-0.001"}}, {"--lr"}); }
  SECTION("NaN learning rate") { check_train_refuses({{"--lr", "nan"}}, {"--lr", "nan"}); }
  SECTION("infinite learning rate") { check_train_refuses({{"--lr", "inf"}}, {"--lr", "inf"}); }
  SECTION("NaN momentum") { check_train_refuses({{"--momentum", "nan"}}, {"--momentum"}); }
  SECTION("learning rate below the min-lr given") {
    check_train_refuses({{"--lr", "1e-5"}, {"--min-lr", "0.002"}}, {"--min-lr 0.002", "above --lr 1e-05"});
  }
  SECTION("validation fraction of 1") {
    check_train_refuses({{"--val-fraction", "1"}}, {"--val-fraction"});
  }
}

TEST_CASE("train refuses a --data file it cannot use, naming the file", "[cli][errors]") {
  ScratchDir dir;
  const std::string data = dir.file("data.txt");
  SECTION("missing file") { check_train_refuses({{"--data", data}}, {data, "does not exist"}); }
  SECTION("a directory") {
    fs::create_directory(data);
    check_train_refuses({{"--data", data}}, {data, "directory"});
  }
  SECTION("unreadable file") {
    if (::geteuid() == 0) {
      WARN("skipped: root reads files whatever their permissions");
      return;
    }
    write_bytes(data, "the cat sees the dog. the dog sees the cat.\n");
    fs::permissions(data, fs::perms::none);
    check_train_refuses({{"--data", data}}, {data});
  }
  SECTION("empty file") {
    write_bytes(data, "");
    check_train_refuses({{"--data", data}}, {data, "empty"});
  }
  SECTION("random bytes that are not UTF-8") {
    std::mt19937 gen(7);
    std::string bytes(4096, '\0');
    for (char& c : bytes) c = static_cast<char>(gen() & 0xff);
    bytes[0] = static_cast<char>(0xff);  // never valid in UTF-8, whatever the generator gives
    write_bytes(data, bytes);
    check_train_refuses({{"--data", data}}, {data, "UTF-8"});
  }
  SECTION("text shorter than a context window") {
    write_bytes(data, "0123456789abcdef");  // 16 characters: no window of 16 + 1
    check_train_refuses({{"--data", data}}, {data, "block"});
  }
}

TEST_CASE("train refuses an --out it cannot write, and one that holds a checkpoint",
          "[cli][errors]") {
  ScratchDir dir;
  SECTION("a path under a regular file") {
    write_bytes(dir.file("file"), "not a directory");
    const std::string out = dir.file("file") + "/sub";
    check_one_line_error(run_cli(tiny_train_args(out)), {out});
    CHECK(read_bytes(dir.file("file")) == "not a directory");
    CHECK(dir.entries() == std::set<std::string>{"file"});
  }
  SECTION("a checkpoint already there, without --force") {
    const std::string out = dir.file("run");
    train_tiny_model(out);
    const DirSnapshot before = snapshot(out);
    check_one_line_error(run_cli(tiny_train_args(out)), {out, "--force", "--resume"});
    CHECK(snapshot(out) == before);
  }
}

TEST_CASE("a run or model folder that cannot be looked at is named with the system's reason",
          "[cli][errors]") {
  ScratchDir dir;
  fs::create_directory_symlink("loop", dir.file("loop"));
  const std::string too_long = dir.file(std::string(300, 'a'));
  for (const auto& [path, reason] : {std::pair{dir.file("loop/run"), "Too many levels of symbolic links"},
                                     std::pair{too_long, "File name too long"}}) {
    CAPTURE(path);
    const std::string run_fault = "cannot read run directory " + path + ": " + reason;
    const std::string model_fault = "cannot read model directory " + path + ": " + reason;
    for (const CliResult& r : {run_cli(tiny_train_args(path)), run_cli({"train", "--resume", path})}) {
      check_one_line_error(r, {run_fault});
      CHECK(r.exited_with(1));
    }
    const CliResult tuned = run_cli({"train", "--out", dir.file("tuned"), "--init-from", path, "--steps", "1"});
    check_one_line_error(tuned, {model_fault});
    CHECK(tuned.exited_with(1));
    for (const char* command : {"sample", "eval", "heads"}) {
      const CliResult r = run_cli({command, "--model", path});
      check_one_line_error(r, {model_fault});
      CHECK(r.exited_with(1));
    }
  }
  // A built-in name too long to be a file is an unknown built-in, not a file-system fault.
  const std::string builtin = "builtin:" + std::string(300, 'a');
  check_one_line_error(run_cli(tiny_train_args(dir.file("run"), {"--data", builtin})),
                       {"unknown built-in data " + builtin});
  CHECK(dir.entries() == std::set<std::string>{"loop"});
}

TEST_CASE("a relative path under a working directory that was removed is refused as missing",
          "[cli][errors]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  // (stderr, exit code) of tinygpt `args` run in a folder removed before it starts.
  const auto in_removed_folder = [&](const std::string& args) {
    const std::string gone = dir.file("gone"), err = dir.file("err.txt");
    fs::create_directory(gone);
    const int status = std::system(("cd '" + gone + "' && rmdir '" + gone + "' && exec '" + tinygpt_binary() +
                                    "' " + args + " > /dev/null 2> '" + err + "'").c_str());
    return std::pair{read_bytes(err), WIFEXITED(status) ? WEXITSTATUS(status) : -1};
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train --data text.txt --out '" + dir.file("run") + "'", "'text.txt' does not exist"},
      {"eval --model '" + model + "' --data text.txt", "'text.txt' does not exist"},
      {"sample --model run", "model directory run does not exist"},
      {"heads --model '" + model + "' --html page.html", "cannot create a temporary file beside 'page.html'"}};
  for (const auto& [args, fault] : cases) {
    CAPTURE(args);
    const auto [err, code] = in_removed_folder(args);
    CHECK(code == 1);
    CHECK(err.rfind("tinygpt: error: ", 0) == 0);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK_THAT(err, Catch::Matchers::Contains(fault));
  }
  CHECK(dir.entries() == std::set<std::string>{"err.txt", "model"});
}

TEST_CASE("sample, eval and heads refuse a missing or damaged checkpoint, naming the file",
          "[cli][errors][checkpoint]") {
  SECTION("model directory missing") {
    check_model_commands_refuse([](const std::string& model) { fs::remove_all(model); },
                                {"does not exist"});
  }
  SECTION("model.safetensors missing") {
    check_model_commands_refuse(
        [](const std::string& model) { fs::remove(model + "/model.safetensors"); },
        {"model.safetensors"});
  }
  SECTION("model.safetensors truncated") {
    check_model_commands_refuse(
        [](const std::string& model) {
          const std::string path = model + "/model.safetensors";
          const std::string bytes = read_bytes(path);
          write_bytes(path, bytes.substr(0, bytes.size() / 2));
        },
        {"model.safetensors", "past the end"});
  }
  SECTION("model.safetensors with corrupted header bytes") {
    check_model_commands_refuse(
        [](const std::string& model) {
          const std::string path = model + "/model.safetensors";
          std::string bytes = read_bytes(path);
          bytes.replace(8, 4, "\x01\xfe{]");  // the start of the JSON header
          write_bytes(path, bytes);
        },
        {"model.safetensors", "header"});
  }
  SECTION("model.safetensors holding a NaN weight") {
    check_model_commands_refuse(
        [](const std::string& model) {
          const std::string path = model + "/model.safetensors";
          std::string bytes = read_bytes(path);
          bytes.replace(bytes.size() - 4, 4, std::string("\x00\x00\xc0\x7f", 4));  // f32 NaN
          write_bytes(path, bytes);
        },
        {"model.safetensors", "non-finite", "nan"});
  }
  SECTION("config.json not JSON") {
    check_model_commands_refuse(
        [](const std::string& model) {
          write_bytes(model + "/config.json", "{\n  \"n_layer\": 1,\n  \"n_head\":\n");
        },
        {"config.json", "JSON"});
  }
  SECTION("config.json missing a key") {
    check_model_commands_refuse(replacing("config.json", "\"n_embd\"", "\"width\""),
                                {"config.json", "n_embd"});
  }
  SECTION("config.json of a wider model than the weights") {
    check_model_commands_refuse(file_of_wider_model("config.json"),
                                {"model.safetensors", "transformer.wte.weight"});
  }
  SECTION("weights of a wider model than config.json") {
    check_model_commands_refuse(file_of_wider_model("model.safetensors"),
                                {"model.safetensors", "transformer.wte.weight"});
  }
  SECTION("config.json of a far wider model, refused before it is built") {
    check_model_commands_refuse(replacing("config.json", "\"n_embd\": 16", "\"n_embd\": 4096"),
                                {"model.safetensors", "config.json", "(34, 4096)"});
  }
  SECTION("config.json with more layers than the weights") {
    check_model_commands_refuse(replacing("config.json", "\"n_layer\": 1", "\"n_layer\": 3"),
                                {"model.safetensors", "n_layer 3"});
  }
  SECTION("tokenizer.json with one character fewer than vocab_size") {
    check_model_commands_refuse(
        [](const std::string& model) { write_bytes(model + "/tokenizer.json", R"({"vocab": ["a", "b"]})"); },
        {"tokenizer.json", "vocab_size"});
  }
  SECTION("tokenizer.json not JSON") {
    check_model_commands_refuse(
        [](const std::string& model) { write_bytes(model + "/tokenizer.json", "{\"vocab\": [\n"); },
        {"tokenizer.json"});
  }
}

TEST_CASE("sample --prompt and heads --text refuse a character outside the vocabulary",
          "[cli][errors][sample]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  const DirSnapshot before = snapshot(model);
  // The toy vocabulary is lowercase letters, space, newline and " ( ) . [ ]
  check_one_line_error(run_cli({"sample", "--model", model, "--prompt", "the Cat"}),
                       {"--prompt", "U+0043 'C'"});
  check_one_line_error(run_cli({"sample", "--model", model, "--prompt", "a\tb"}),
                       {"--prompt", "U+0009"});
  check_one_line_error(run_cli({"heads", "--model", model, "--text", "the cat sees 2 dogs"}),
                       {"--text", "U+0032 '2'"});
  CHECK(snapshot(model) == before);
}

TEST_CASE("sample refuses nonsense sampling settings", "[cli][errors][sample]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  check_one_line_error(run_cli({"sample", "--model", model, "--temperature", "nan"}),
                       {"--temperature"});
  check_one_line_error(run_cli({"sample", "--model", model, "--temperature", "-1"}),
                       {"--temperature"});
  check_one_line_error(run_cli({"sample", "--model", model, "--tokens", "-3"}), {"--tokens"});
  check_one_line_error(run_cli({"sample", "--model", model, "--top-k", "two"}), {"--top-k"});
}

TEST_CASE("eval refuses text the model cannot read, naming the file", "[cli][errors]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  const DirSnapshot before = snapshot(model);
  const std::string data = dir.file("text.txt");
  SECTION("a character not in the model's vocabulary") {
    std::string text;
    while (text.size() < 400) text += "the cat sees the dog. ";
    text += "the caf\xc3\xa9.\n";  // é
    write_bytes(data, text);
    check_one_line_error(
        run_cli({"eval", "--model", model, "--data", data, "--threads", "1"}),
        {data, "U+00E9"});
  }
  SECTION("text shorter than one window of the split") {
    write_bytes(data, "the cat sees the dog.\n");
    check_one_line_error(
        run_cli({"eval", "--model", model, "--data", data, "--threads", "1"}), {data});
  }
  SECTION("missing file") {
    check_one_line_error(run_cli({"eval", "--model", model, "--data", data}),
                         {data, "does not exist"});
  }
  CHECK(snapshot(model) == before);
}

TEST_CASE("bench refuses a --data file it cannot use, naming the file and the flag", "[cli][errors][bench]") {
  ScratchDir dir;
  const std::string data = dir.file("data.txt");
  SECTION("missing file") {
    check_one_line_error(run_cli({"bench", "--data", data}), {"'" + data + "' does not exist"});
  }
  SECTION("not UTF-8") {
    write_bytes(data, "ab\xff");
    check_one_line_error(run_cli({"bench", "--data", data}), {"'" + data + "' is not UTF-8 text"});
  }
  SECTION("text shorter than a context window") {
    write_bytes(data, "0123456789abcdef");
    check_one_line_error(run_cli({"bench", "--data", data, "--block", "16"}),
                         {data + ": the train split has 14 tokens but --block 16 needs at least 17"});
  }
}

// The CLI drops the library's class and function names from its messages ("TextDataset: "), and
// keeps a file whose name could pass for one.
TEST_CASE("a data file named like a C++ class or function keeps its name in the message", "[cli][errors]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  CliOptions in_dir;
  in_dir.cwd = dir.file(".");
  for (const std::string name : {"Notes", "my_notes"}) {
    CAPTURE(name);
    write_bytes(dir.file(name), "the cat.\n");  // too short for any window
    const std::string named = dir.file(name) + ": the ";
    check_one_line_error(run_cli({"train", "--data", name, "--out", "run"}, in_dir), {named + "train split"});
    check_one_line_error(run_cli({"eval", "--model", model, "--data", name}, in_dir), {named + "val split"});
    check_one_line_error(run_cli({"bench", "--data", name, "--block", "8"}, in_dir), {named + "train split"});
  }
}

TEST_CASE("heads refuses a model whose context is too short to probe", "[cli][errors]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model, {"--block", "3"});
  const DirSnapshot before = snapshot(model);
  check_one_line_error(run_cli({"heads", "--model", model, "--threads", "1"}),
                       {model, "context of 3"});
  CHECK(snapshot(model) == before);
}

TEST_CASE("heads refuses an --out or an --html it cannot write", "[cli][errors]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  const DirSnapshot before = snapshot(model);
  write_bytes(dir.file("file"), "x");
  const std::string out = dir.file("file") + "/sub";
  check_one_line_error(
      run_cli({"heads", "--model", model, "--out", out, "--threads", "1"}), {out});
  const std::string page = dir.file("file") + "/page.html";
  check_one_line_error(run_cli({"heads", "--model", model, "--html", page, "--out",
                                dir.file("pics"), "--threads", "1"}),
                       {page});
  CHECK(snapshot(model) == before);
}

TEST_CASE("eval refuses to report a loss that is not finite", "[cli][errors]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  // Every weight 1e30: finite, but the forward pass overflows float.
  const std::string path = model + "/model.safetensors";
  std::string bytes = read_bytes(path);
  const uint64_t header = *reinterpret_cast<const uint64_t*>(bytes.data());
  const float huge = 1e30f;
  for (size_t at = 8 + header; at + 4 <= bytes.size(); at += 4) std::memcpy(&bytes[at], &huge, 4);
  write_bytes(path, bytes);
  fs::remove(model + "/checkpoint.json");  // unchecked: the weights are what is at fault
  check_one_line_error(
      run_cli({"eval", "--model", model, "--data", "builtin:toy", "--json", "--threads", "1"}),
      {model, "loss", "not finite"});
}

TEST_CASE("a line break inside a bad value or a path stays on the one error line", "[cli][errors]") {
  ScratchDir dir;
  const std::string data = dir.file("two\nlines.txt");
  check_one_line_error(run_cli(tiny_train_args(dir.file("out"), {"--data", data})),
                       {"two\\nlines.txt"});
  check_one_line_error(run_cli(tiny_train_args(dir.file("out"), {"--lr", "1\n2"})),
                       {"--lr", "1\\n2"});
  CHECK(dir.entries().empty());
}
