// Where heads writes: never over a file of a checkpoint, nothing before its arguments are
// checked, and on a checkpoint it cannot write it still reports (pictures only where it may).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "cli/cli_helpers.hpp"
#include "io/file_size_limit.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;

TEST_CASE("heads --html refuses to name a file of a checkpoint", "[cli][hardening][heads]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run, {"--keep-best"});
  const DirSnapshot before = snapshot(run);
  for (const std::string& target :
       {run + "/model.safetensors", run + "/config.json", run + "/optimizer.safetensors",
        run + "/trainer_state.json", run + "/log.jsonl", run + "/checkpoint.json",
        run + "/tokenizer.json", run + "/.tinygpt-run.lock", run + "/best/model.safetensors",
        run + "/./model.safetensors"}) {
    CAPTURE(target);
    const CliResult r = run_cli({"heads", "--model", run, "--html", target, "--out", dir.file("pics")});
    check_one_line_error(r, {"--html " + target + " is a file of the checkpoint"});
    CHECK(r.exited_with(2));
    CHECK(snapshot(run) == before);
    CHECK_FALSE(fs::exists(dir.file("pics")));
  }
  // The run's own page may be written again.
  run_ok({"heads", "--model", run, "--html", run + "/report.html"});
}

TEST_CASE("heads checks --attribute against the probe text before any work or output", "[cli][hardening][heads]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const DirSnapshot before = snapshot(run);
  for (const std::string position : {"0", "16", "100000"}) {  // the tiny model's picture: 16 characters
    CAPTURE(position);
    const CliResult r = run_cli({"heads", "--model", run, "--attribute", position, "--html", dir.file("page.html")});
    check_one_line_error(r, {"--attribute"});
    CHECK(r.exited_with(2));
    CHECK(r.out.empty());
    CHECK(snapshot(run) == before);
    CHECK_FALSE(fs::exists(dir.file("page.html")));
  }
  const nlohmann::json attribution = nlohmann::json::parse(
      run_ok({"heads", "--model", run, "--attribute", "15", "--json", "--out", dir.file("pics")}).out)["attribution"];
  CHECK(attribution["position"] == 15);
  CHECK(attribution["rollout_spearman"].is_number());
}

TEST_CASE("heads on a checkpoint it cannot write reports, drawing pictures only where it may",
          "[cli][hardening][heads]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const DirSnapshot before = snapshot(run);
  if (::geteuid() != 0 || std::system("setpriv --version > /dev/null 2>&1") != 0) {
    WARN("skipped: needs root and setpriv to run tinygpt as a user who may read but not write");
    return;
  }
  fs::permissions(dir.file(""), fs::perms::all, fs::perm_options::replace);  // mkdtemp made it 0700
  const auto as_nobody = [&](const std::string& args, const std::string& out, const std::string& err) {
    const std::string command = "setpriv --reuid=65534 --regid=65534 --clear-groups '" + tinygpt_binary() +
                                "' heads --model '" + run + "' --threads 1 " + args + " > '" + out + "' 2> '" + err + "'";
    const int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
  };
  const int json_status = as_nobody("--json", dir.file("out.json"), dir.file("err.txt"));
  if (json_status == 126 || json_status == 127) {
    WARN("skipped: the unprivileged user cannot run " + tinygpt_binary());
    return;
  }
  CHECK(json_status == 0);
  CHECK(read_bytes(dir.file("err.txt")) == "tinygpt: note: " + run + " is not writable, so no heatmaps are drawn; "
                                           "pass --out DIR to draw them elsewhere\n");
  CHECK(nlohmann::json::parse(read_bytes(dir.file("out.json")))["heads"].size() == 2);
  // With a folder it may write, the pictures go there.
  const std::string pics = dir.file("pics");
  fs::create_directories(pics);
  fs::permissions(pics, fs::perms::all, fs::perm_options::replace);
  CHECK(as_nobody("--out '" + pics + "'", dir.file("out.txt"), dir.file("err.txt")) == 0);
  CHECK(fs::exists(pics + "/layer0_head0.png"));
  CHECK(snapshot(run) == before);
}

TEST_CASE("heads makes the folders it writes into, and names the one it cannot make", "[cli][hardening][heads]") {
  ScratchDir dir;
  const std::string gpt = dir.file("gpt"), pairs = dir.file("pairs");
  train_tiny_model(gpt);
  run_ok(tiny_seq2seq_args(pairs, {"--steps", "2"}));
  write_bytes(dir.file("afile"), "mine\n");
  for (const std::string& run : {gpt, pairs}) {
    CAPTURE(run);
    const std::string tag = fs::path(run).filename().string();
    // A page and heatmaps in folders that do not exist yet.
    const std::string page = dir.file(tag + "-pages/nested/explorer.html"), pics = dir.file(tag + "-pics/a/b");
    run_ok({"heads", "--model", run, "--html", page, "--out", pics});
    CHECK(fs::is_regular_file(page));
    CHECK_FALSE(fs::is_empty(pics));
    // A file where a folder must go: one line naming the folder and the reason; the file stays.
    for (const std::string& out : {dir.file("afile"), dir.file("afile/sub")}) {
      CAPTURE(out);
      const CliResult r = run_cli({"heads", "--model", run, "--out", out});
      check_one_line_error(r, {"cannot create heatmap directory " + out + ": Not a directory"});
      CHECK(r.exited_with(1));
    }
    const CliResult r = run_cli({"heads", "--model", run, "--html", dir.file("afile/explorer.html"),
                                 "--out", dir.file(tag + "-more")});
    check_one_line_error(r, {"cannot write page " + dir.file("afile/explorer.html") + ": cannot create its directory " +
                             dir.file("afile") + ": Not a directory"});
    CHECK(r.exited_with(1));
    CHECK(read_bytes(dir.file("afile")) == "mine\n");
    // A link where the heatmaps go is refused, whatever the model.
    const std::string real = dir.file(tag + "-real"), link = dir.file(tag + "-link");
    fs::create_directories(real);
    fs::create_directory_symlink(real, link);
    check_one_line_error(run_cli({"heads", "--model", run, "--out", link}), {link + " is a symbolic link"});
    CHECK(fs::is_empty(real));
  }
  const CliResult attributed = run_cli({"heads", "--model", gpt, "--attribute", "3", "--out", dir.file("afile")});
  check_one_line_error(attributed, {"cannot create heatmap directory " + dir.file("afile") + ": Not a directory"});
}

TEST_CASE("heatmaps a full disk interrupts leave the earlier set as it was, and none half drawn",
          "[cli][hardening][heads]") {
  ScratchDir dir;
  const std::string gpt = dir.file("gpt"), wider = dir.file("wider"), pairs = dir.file("pairs");
  train_tiny_model(gpt);  // its set: layer0.png and layer0_head{0,1}.png in gpt/heads, and its record
  train_tiny_model(wider, {"--layers", "2", "--seed", "7"});
  run_ok(tiny_seq2seq_args(pairs, {"--steps", "2"}));
  const std::string pics = gpt + "/heads";
  const DirSnapshot before = snapshot(pics);
  REQUIRE(before.size() == 4);
  {
    // Every heatmap fits (14 KB at most here); the explorer page (~50 KB), written after them, does not.
    const FileSizeLimit limit(20000);
    const std::string page = dir.file("page.html");
    const CliResult r = run_cli({"heads", "--model", wider, "--out", pics, "--html", page, "--threads", "1"});
    check_one_line_error(r, {"cannot write", page, "File too large"});
    CHECK(r.exited_with(1));
    CHECK(snapshot(pics) == before);
    CHECK_FALSE(fs::exists(page));
    // A folder the command made for pictures it then could not keep goes with them.
    for (const std::string& run : {gpt, pairs}) {
      CAPTURE(run);
      const std::string fresh = dir.file(fs::path(run).filename().string() + "-new");
      check_one_line_error(run_cli({"heads", "--model", run, "--out", fresh, "--html", page, "--threads", "1"}),
                           {"cannot write", page, "File too large"});
      CHECK_FALSE(fs::exists(fresh));
    }
  }
  // Drawn whole, the new set replaces the old one; a smaller set then removes the pictures it
  // did not draw again.
  run_ok({"heads", "--model", wider, "--out", pics, "--threads", "1"});
  CHECK(fs::is_regular_file(pics + "/layer1_head1.png"));
  CHECK(snapshot(pics).size() == 7);
  CHECK(snapshot(pics) != before);
  run_ok({"heads", "--model", gpt, "--out", pics, "--threads", "1"});
  CHECK(snapshot(pics) == before);
}
