// The process-wide threading settings of threads.hpp: the team's size (OMP_NUM_THREADS honoured),
// and flushing subnormal floats on the calling thread and on every OpenMP thread, and off again.
#include <omp.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "threads_scope.hpp"
#include "tinygpt/autograd/threads.hpp"

using namespace tinygpt;
using tinygpt::testing::FlushDenormalsScope;
using tinygpt::testing::ThreadsScope;

namespace {

// Which of the two modes a thread runs: DAZ reads a subnormal input as zero, FTZ writes a result
// below the normal range as zero.
struct Modes {
  bool daz = false;
  bool ftz = false;
};

Modes modes_here() {
  // volatile: computed at run time, under this thread's modes, not folded by the compiler.
  volatile float subnormal = std::numeric_limits<float>::denorm_min() * 4.0f;
  volatile float smallest_normal = std::numeric_limits<float>::min();
  volatile float half = 0.5f;
  Modes m;
  m.daz = subnormal + smallest_normal == smallest_normal;
  m.ftz = smallest_normal * half == 0.0f;
  return m;
}

// The modes of the calling thread (first) and of each thread of a team of num_threads().
std::vector<Modes> modes_of_team() {
  std::vector<Modes> out(1 + num_threads());
  out[0] = modes_here();
#pragma omp parallel num_threads(num_threads())
  out[1 + omp_get_thread_num()] = modes_here();
  return out;
}

}  // namespace

TEST_CASE("set_flush_denormals sets FTZ and DAZ on every thread of the team, and clears them",
          "[threads]") {
#if !defined(__SSE__)
  WARN("no x86 FTZ/DAZ modes on this CPU: nothing to check");
  return;
#endif
  ThreadsScope two(2);
  {
    FlushDenormalsScope off(false);
    CHECK_FALSE(flush_denormals());
    for (const Modes& m : modes_of_team()) {
      CHECK_FALSE(m.daz);
      CHECK_FALSE(m.ftz);
    }
  }
  {
    FlushDenormalsScope on(true);
    CHECK(flush_denormals());
    for (const Modes& m : modes_of_team()) {
      CHECK(m.daz);
      CHECK(m.ftz);
    }
    // A team set up afterwards, larger than the one that was there, runs them too.
    ThreadsScope one(1);
    ThreadsScope three(3);
    for (const Modes& m : modes_of_team()) {
      CHECK(m.daz);
      CHECK(m.ftz);
    }
  }
  for (const Modes& m : modes_of_team()) {
    CHECK_FALSE(m.daz);
    CHECK_FALSE(m.ftz);
  }
}

TEST_CASE("CTest runs every test case on one OpenMP and one OpenBLAS thread", "[threads]") {
  // tests/CMakeLists.txt sets these three on every case, TINYGPT_CTEST first: two cases at once
  // on the two cores, each with a team of two, slowed some cases 40-fold.
  const char* marker = std::getenv("TINYGPT_CTEST");
  if (marker == nullptr) {
    WARN("not run by CTest: nothing to check");
    return;
  }
  const char* omp = std::getenv("OMP_NUM_THREADS");
  const char* blas = std::getenv("OPENBLAS_NUM_THREADS");
  REQUIRE(omp != nullptr);
  REQUIRE(blas != nullptr);
  CHECK(std::string(omp) == "1");
  CHECK(std::string(blas) == "1");
  CHECK(num_threads() == 1);
}

namespace {

// Sets OMP_NUM_THREADS (or unsets it, given nullptr) for one scope and puts back what was there.
class OmpNumThreadsScope {
 public:
  explicit OmpNumThreadsScope(const char* value) {
    const char* before = std::getenv("OMP_NUM_THREADS");
    if (before != nullptr) previous_ = before;
    set(value);
  }
  ~OmpNumThreadsScope() { set(previous_ ? previous_->c_str() : nullptr); }
  OmpNumThreadsScope(const OmpNumThreadsScope&) = delete;
  OmpNumThreadsScope& operator=(const OmpNumThreadsScope&) = delete;

 private:
  static void set(const char* value) {
    if (value != nullptr) {
      setenv("OMP_NUM_THREADS", value, 1);
    } else {
      unsetenv("OMP_NUM_THREADS");
    }
  }
  std::optional<std::string> previous_;
};

}  // namespace

TEST_CASE("set_num_threads(0) takes OMP_NUM_THREADS's count where it gives one, else every core",
          "[threads]") {
  ThreadsScope restore(num_threads());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // What libgomp reads as a count (the first of a list), and what it refuses.
  const std::vector<std::pair<const char*, int>> cases = {
      {"3", 3}, {" 5 ", 5}, {"2,1", 2}, {"07", 7}, {nullptr, 0}, {"", 0}, {"0", 0},
      {"-2", 0}, {"abc", 0}, {"2x", 0}, {",2", 0}, {"99999999999", 0}};
  for (const auto& [value, count] : cases) {
    INFO("OMP_NUM_THREADS=" << (value != nullptr ? value : "(unset)"));
    OmpNumThreadsScope env(value);
    CHECK(omp_num_threads_from_env() == count);
    set_num_threads(0);
    CHECK(num_threads() == (count > 0 ? count : cores));
    CHECK(omp_get_max_threads() == num_threads());
    set_num_threads(1);  // an explicit count wins over the environment
    CHECK(num_threads() == 1);
  }
}
