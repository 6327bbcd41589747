// The process-wide threading settings of threads.hpp, and the ones CTest runs every case under.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "tinygpt/autograd/threads.hpp"

using namespace tinygpt;

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
