// Where heads writes: never over a file of a checkpoint, nothing before its arguments are
// checked, and on a checkpoint it cannot write it still reports (pictures only where it may).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "cli_helpers.hpp"
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
