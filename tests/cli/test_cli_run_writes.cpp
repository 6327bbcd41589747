// Writes that stay in the run's folder, and several commands on one run folder at once (issue 57,
// items 4, 12 and 8): entries planted in a run's folder never move a file out of another folder,
// what is in the way of a run's outputs is refused before it trains, heads never replaces the
// run's text nor removes a file it did not draw, and heads drawing while another heads or a
// training run works on the same run succeeds.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;

namespace {

constexpr const char* kVictimConfig = "{\"the\": \"config of another run\"}\n";

// A commit record (io/commit.hpp's format) naming `name`; the checksum is never reached: a
// record is rolled forward before anything is read.
std::string commit_record(const std::string& name) {
  return "{\"format\": \"tinygpt-checkpoint\", \"format_version\": 1, \"files\": [{\"name\": \"" +
         name + "\", \"size\": 36, \"sha256\": \"" + std::string(64, '0') + "\"}]}\n";
}

// The commands that write into `run` at once, before they train.
std::vector<std::vector<std::string>> writers_of(const std::string& run) {
  return {{"train", "--resume", run, "--steps", "30"}, tiny_train_args(run, {"--force"})};
}

// `args` refused in one line naming `path`, before it trained: `run` and `victim` as they were.
void check_refused_before_training(const std::vector<std::string>& args, const std::string& run,
                                   const std::string& victim, const std::string& path) {
  CAPTURE(args);
  const DirSnapshot run_before = snapshot(run), victim_before = snapshot(victim);
  const CliResult r = run_cli(args);
  check_one_line_error(r, {path});
  CHECK(snapshot(victim) == victim_before);
  CHECK(snapshot(run) == run_before);
}

// The heatmaps heads draws for the tiny model (1 layer, 2 heads).
bool has_tiny_pictures(const std::string& dir) {
  for (const char* name : {"layer0_head0.png", "layer0_head1.png", "layer0.png"}) {
    if (!fs::is_regular_file(fs::path(dir) / name)) return false;
  }
  return true;
}

// Entries of `dir` named like a drawing folder.
size_t drawing_folders_in(const std::string& dir) {
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    n += entry.path().filename().string().rfind(".tinygpt-drawing", 0) == 0 ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("a staging folder, commit record or staged file planted in a run never moves a file "
          "from another folder", "[cli][runwrites]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), victim = dir.file("victim");
  const std::string staging = run + "/.tinygpt-staging", record = run + "/.tinygpt-commit.json";
  train_tiny_model(run);
  fs::create_directories(victim);
  write_bytes(victim + "/config.json", kVictimConfig);
  write_bytes(dir.file("record.json"), commit_record("config.json"));
  struct Plant {
    const char* what;
    std::string named;  // the path the refusal names
    void (*plant)(const std::string& run, const std::string& victim);
  };
  const std::vector<Plant> plants = {
      {"the staging folder, a link to another folder", staging,
       [](const std::string& r, const std::string& v) {
         fs::create_directory_symlink(v, r + "/.tinygpt-staging");
         write_bytes(r + "/.tinygpt-commit.json", commit_record("config.json"));
       }},
      {"a record naming a file of another folder", record,
       [](const std::string& r, const std::string&) {
         fs::create_directory(r + "/.tinygpt-staging");
         write_bytes(r + "/.tinygpt-commit.json", commit_record("../victim/config.json"));
       }},
      {"a record naming an absolute path", record,
       [](const std::string& r, const std::string& v) {
         fs::create_directory(r + "/.tinygpt-staging");
         write_bytes(r + "/.tinygpt-commit.json", commit_record(v + "/config.json"));
       }},
      {"a staged file, a link to a file of another folder", staging + "/config.json",
       [](const std::string& r, const std::string& v) {
         fs::create_directory(r + "/.tinygpt-staging");
         fs::create_symlink(v + "/config.json", r + "/.tinygpt-staging/config.json");
         write_bytes(r + "/.tinygpt-commit.json", commit_record("config.json"));
       }},
      {"the record, a link", record,
       [](const std::string& r, const std::string& v) {
         fs::create_symlink(fs::path(v).parent_path() / "record.json", r + "/.tinygpt-commit.json");
       }},
  };
  for (const Plant& p : plants) {
    CAPTURE(p.what);
    for (const auto& args : writers_of(run)) {
      p.plant(run, victim);
      check_refused_before_training(args, run, victim, p.named);
      CHECK(read_bytes(victim + "/config.json") == kVictimConfig);
      fs::remove_all(staging);
      fs::remove(record);
    }
  }
  run_ok({"train", "--resume", run, "--steps", "30"});  // the plants gone, the run goes on
}

TEST_CASE("a file where a run writes a folder, or a folder where it writes a file, is refused "
          "before the first step", "[cli][runwrites]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), victim = dir.file("victim");
  train_tiny_model(run);
  fs::create_directories(victim);
  for (const char* name : {"heads", "best"}) {  // folders the run writes
    CAPTURE(name);
    fs::remove_all(run + "/" + name);
    write_bytes(run + "/" + name, "a file of the user's\n");
    for (auto args : writers_of(run)) {
      check_refused_before_training(concat(args, {"--keep-best"}), run, victim, run + "/" + name);
    }
    CHECK(read_bytes(run + "/" + name) == "a file of the user's\n");
    fs::remove(run + "/" + name);
  }
  for (const char* name : {"report.html", "loss.png", "heads_over_time.png", "config.json",
                           "model.safetensors", "log.jsonl"}) {  // files it writes
    CAPTURE(name);
    const std::string path = run + "/" + name;
    const std::string kept = dir.file("kept");
    fs::rename(path, kept);
    fs::create_directories(path + "/inside");
    write_bytes(path + "/inside/notes.txt", "mine\n");
    for (const auto& args : writers_of(run)) check_refused_before_training(args, run, victim, path);
    fs::remove_all(path);
    fs::rename(kept, path);
  }
  run_ok({"train", "--resume", run, "--steps", "30"});
}

TEST_CASE("heads --html never replaces the text the run trained on, by any path to it",
          "[cli][runwrites]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), text = dir.file("text.txt");
  std::string corpus;
  for (int i = 0; i < 40; ++i) corpus += "the cat sat on the mat. the dog sat on the log. ";
  write_bytes(text, corpus);
  train_tiny_model(run, {"--data", text});
  fs::create_symlink(text, dir.file("link.txt"));
  fs::create_hard_link(text, dir.file("hard.txt"));
  fs::create_directories(dir.file("sub"));
  fs::create_symlink(run + "/config.json", dir.file("config-link.json"));
  const std::string config = read_bytes(run + "/config.json");
  for (const std::string& page : {text, dir.file("sub/../text.txt"), dir.file("none/../text.txt"), dir.file("link.txt"),
                                  dir.file("hard.txt"), dir.file("config-link.json")}) {
    CAPTURE(page);
    const CliResult r = run_cli({"heads", "--model", run, "--html", page, "--out", dir.file("pics")});
    check_one_line_error(r, {"--html", page});
    CHECK(r.exited_with(2));
    CHECK(read_bytes(text) == corpus);
    CHECK(read_bytes(run + "/config.json") == config);
    CHECK(fs::is_symlink(dir.file("link.txt")));
  }
  run_ok({"heads", "--model", run, "--html", dir.file("page.html"), "--out", dir.file("pics")});
  CHECK(read_bytes(text) == corpus);
}

TEST_CASE("heads --out removes only the pictures it drew before, never a file of the user's",
          "[cli][runwrites]") {
  ScratchDir dir;
  const std::string run = dir.file("run"), wide = dir.file("wide"), pics = dir.file("pics");
  train_tiny_model(run);
  train_tiny_model(wide, {"--layers", "2"});
  fs::create_directories(pics);
  // Named like pictures heads draws, but not drawn by this model: the user's.
  const std::vector<std::string> users = {"layer7.png", "layer3_head9.png", "attribution_pos3.png",
                                          "cross_layer0.png", "notes.txt"};
  for (const std::string& name : users) write_bytes(pics + "/" + name, "mine: " + name);
  const auto users_intact = [&] {
    for (const std::string& name : users) {
      if (read_bytes(pics + "/" + name) != "mine: " + name) return false;
    }
    return true;
  };
  run_ok({"heads", "--model", wide, "--out", pics, "--attribute", "5"});
  CHECK(fs::exists(pics + "/layer1_head1.png"));
  CHECK(fs::exists(pics + "/attribution_pos5.png"));
  CHECK(users_intact());
  // A smaller model's set replaces the wider one's: its own earlier pictures go, the user's stay.
  run_ok({"heads", "--model", run, "--out", pics});
  CHECK(has_tiny_pictures(pics));
  CHECK_FALSE(fs::exists(pics + "/layer1_head1.png"));
  CHECK_FALSE(fs::exists(pics + "/layer1.png"));
  CHECK_FALSE(fs::exists(pics + "/attribution_pos5.png"));
  CHECK(users_intact());
  CHECK(drawing_folders_in(pics) == 0);
}

TEST_CASE("two heads on one run at once both draw their whole set", "[cli][runwrites][concurrent]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    CliProcess first({"heads", "--model", run, "--threads", "1"});
    CliProcess second({"heads", "--model", run, "--threads", "1"});
    for (CliProcess* p : {&first, &second}) {
      const CliResult r = p->finish();
      INFO(r.describe());
      CHECK(r.exited_with(0));
    }
    CHECK(has_tiny_pictures(run + "/heads"));
    CHECK(drawing_folders_in(run + "/heads") == 0);
  }
}

TEST_CASE("heads in a loop while train --resume runs on the same run: both end 0",
          "[cli][runwrites][concurrent][slow]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  CliProcess trainer({"train", "--resume", run, "--steps", "400", "--eval-every", "5", "--threads", "1"});
  int rounds = 0;
  bool trained = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // Until the trainer is done, and at least a few times.
  while ((rounds < 3 || !trained) && std::chrono::steady_clock::now() < until) {
    const CliResult r = run_cli({"heads", "--model", run, "--threads", "1"});
    INFO(r.describe());
    CHECK(r.exited_with(0));
    ++rounds;
    trained = trained || trainer.wait_for(std::chrono::milliseconds(0));
  }
  const CliResult t = trainer.finish();
  INFO(t.describe());
  CHECK(t.exited_with(0));
  CHECK(has_tiny_pictures(run + "/heads"));
  CHECK(drawing_folders_in(run + "/heads") == 0);
}
