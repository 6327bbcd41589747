#pragma once
// Whether the mpirun cases can run: this test build has MPI (TINYGPT_TEST_MPI) and the machine
// has mpirun; they skip otherwise.
#include <cstdlib>

namespace tinygpt::testing {

inline bool can_mpirun() {
#ifdef TINYGPT_TEST_MPI
  return std::system("command -v mpirun > /dev/null 2>&1") == 0;
#else
  return false;
#endif
}

}  // namespace tinygpt::testing
