// The whole-run lock (io/run_lock.hpp): one holder at a time, a clear refusal naming the
// directory and the holder's pid, no conflict with the commit's directory lock.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "scratch_dir.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/io/run_lock.hpp"

using namespace tinygpt::io;
using Catch::Matchers::Contains;
using tinygpt::testing::ScratchDir;

TEST_CASE("a run lock refuses a second holder at once, naming the directory and the pid",
          "[io][run_lock]") {
  ScratchDir dir;
  const std::string run = dir.file("");
  {
    RunLock first(run);
    CHECK(read_file(dir.file(kRunLockFile)) == std::to_string(::getpid()) + "\n");
    try {
      RunLock second(run);
      FAIL("a second lock was granted");
    } catch (const IOError& e) {
      CHECK_THAT(e.what(), Contains(run) && Contains("in use by another training run") &&
                               Contains("pid " + std::to_string(::getpid())));
    }
    // Readers and commits lock the directory itself: no conflict.
    commit_files(run, {{"a", "1"}});
    CHECK(CommittedFiles(run).read("a") == "1");
  }
  RunLock again(run);  // released with its holder
  again.remove();
  CHECK(dir.entries().count(kRunLockFile) == 0);
}
