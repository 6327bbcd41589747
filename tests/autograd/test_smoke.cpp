#include "gradcheck_helpers.hpp"

using namespace tinygpt;
using tinygpt::testing::leaf;

TEST_CASE("gradcheck matmul 2-D", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                    {leaf({3, 4}, 1), leaf({4, 5}, 2)});
}
