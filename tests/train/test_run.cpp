// The Run object: a run started, saved at step k and resumed in a fresh Run ends byte-identical to
// one never interrupted; start refuses a directory that holds a run; resume keeps the run's own
// settings but the ones it may change, and its loss log up to the saved step.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "nn/nn_helpers.hpp"
#include "run_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/train/run.hpp"

using namespace tinygpt;
using namespace tinygpt::train;
using tinygpt::testing::ScratchDir;
using tinygpt::testing::train_to_end;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

TrainOptions quick_options(int64_t steps) {
  TrainOptions o;
  o.steps = steps;
  o.batch = 2;
  o.warmup = 2;
  o.lr_decay_steps = 12;
  o.eval_every = 3;
  o.eval_iters = 1;
  return o;
}

nn::GPTConfig config_with_dropout() {
  nn::GPTConfig c = testing::tiny_config(/*layers=*/1);
  c.dropout = 0.1;  // so that the dropout generator's state matters
  return c;
}

// A text file of a few hundred characters in `dir`.
std::string write_text(const ScratchDir& dir) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat sees the dog " + std::to_string(i % 7) + ".\n";
  io::write_file_synced(dir.file("text.txt"), text);
  return dir.file("text.txt");
}


int64_t lines_in(const std::string& path) {
  std::ifstream in(path);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

TEST_CASE("a Run saved at step 6 and resumed to 12 ends byte-identical to one run to 12", "[run]") {
  ScratchDir dir;
  const std::string text = write_text(dir);
  const std::string a = dir.file("a"), b = dir.file("b");
  {
    Run run = Run::start(a, config_with_dropout(), quick_options(6), text);
    CHECK(run.saved_step() == 0);
    CHECK(std::isnan(run.best_val_loss()));
    train_to_end(run);
    CHECK(run.saved_step() == 6);
  }
  ResumeChanges more;
  more.steps = 12;
  Run resumed = Run::resume(a, more);
  CHECK(resumed.steps_done() == 6);
  CHECK(resumed.options().steps == 12);
  CHECK(resumed.data_source() == text);
  train_to_end(resumed);

  Run straight = Run::start(b, config_with_dropout(), quick_options(12), text);
  train_to_end(straight);
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json",
                           "tokenizer.json", "trainer_state.json"}) {
    INFO(file);
    CHECK(io::read_file(a + "/" + file) == io::read_file(b + "/" + file));
  }
  CHECK(lines_in(a + "/log.jsonl") == 12 + 4);  // a line per step and per evaluation
  CHECK(resumed.best_val_loss() == straight.best_val_loss());
}

TEST_CASE("Run::start stores a file by its absolute path, checks before it writes, and keeps a "
          "checkpoint unless forced", "[run]") {
  ScratchDir dir;
  const std::string text = write_text(dir);
  const std::string a = dir.file("a");

  SECTION("a relative path is stored absolute") {
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.file(""));
    Run run = Run::start(a, config_with_dropout(), quick_options(3), "text.txt");
    fs::current_path(cwd);
    CHECK(run.data_source() == text);
    CHECK(data::same_source(run.data_source(), dir.file("sub/../text.txt")));
  }
  SECTION("bad options are refused before the directory is made") {
    TrainOptions o = quick_options(3);
    o.min_lr = 2 * o.lr;
    CHECK_THROWS_WITH(Run::start(a, config_with_dropout(), o, text),
                      Contains("min_lr") && Contains("above lr"));
    CHECK_FALSE(fs::exists(a));
  }
  SECTION("a width the heads do not divide is refused before the directory is made") {
    nn::GPTConfig c = config_with_dropout();
    c.n_head = 3;
    CHECK_THROWS_WITH(Run::start(a, c, quick_options(3), text), Contains("n_embd") && Contains("n_head"));
    CHECK_FALSE(fs::exists(a));
  }
  SECTION("an existing checkpoint") {
    {
      Run first = Run::start(a, config_with_dropout(), quick_options(3), text);
      train_to_end(first);
      // A living Run holds the directory's run lock.
      CHECK_THROWS_WITH(Run::start(a, config_with_dropout(), quick_options(3), text, 0.1, true),
                        Contains(a) && Contains("in use by another training run"));
    }
    const std::string weights = io::read_file(a + "/model.safetensors");
    // The library names its own settings (Run::start's force, Run::resume), never a CLI flag.
    CHECK_THROWS_WITH(Run::start(a, config_with_dropout(), quick_options(3), text),
                      Contains("already holds a checkpoint; pass resume " + a) &&
                          Contains("or force to replace it") && !Contains("--"));
    nn::GPTConfig other = config_with_dropout();
    other.dropout = 0.0;
    Run replaced = Run::start(a, other, quick_options(3), text, 0.1, /*force=*/true);
    CHECK(io::read_file(a + "/model.safetensors") == weights);  // until the first save
    train_to_end(replaced);
    CHECK(io::read_file(a + "/model.safetensors") != weights);
  }
}

TEST_CASE("Run::resume refuses a total already reached and keeps the log up to its step", "[run]") {
  ScratchDir dir;
  const std::string text = write_text(dir);
  const std::string a = dir.file("a");
  {
    Run run = Run::start(a, config_with_dropout(), quick_options(3), text);
    train_to_end(run);
  }  // it lets go of the run lock
  CHECK_THROWS_WITH(Run::resume(a), Contains(a) && Contains("already at step 3; pass steps above") &&
                                        !Contains("--"));
  ResumeChanges bad;
  bad.steps = 6;
  bad.eval_every = 0;
  CHECK_THROWS_WITH(Run::resume(a, bad), Contains("eval_every"));

  // Lines a later, unsaved part of the run logged before it stopped are dropped.
  std::string log = io::read_file(a + "/log.jsonl");
  io::write_file_synced(a + "/log.jsonl", log + "{\"step\": 4, \"loss\": 1.0}\n");
  ResumeChanges more;
  more.steps = 4;
  Run resumed = Run::resume(a, more);
  CHECK(resumed.log().text() == log);
  resumed.step();
  CHECK(resumed.log().text().size() > log.size());
}
