// Performer's approximation of softmax attention against its number of random features M: the
// table of docs/ATTENTION_VARIANTS.md ("Performer"). Random q, k, v (4 heads, 64 positions, width
// 16, seed 1; q and k entries of std 0.5 and 1.0), causal attention, the relative error of the
// outputs averaged over 8 draws of the features. Random features estimate each weight with a
// standard deviation ~ 1/sqrt(M), so error x sqrt(M) levels off once the error is small.
#include <cmath>
#include <cstdio>

#include "performer_error.hpp"

int main() {
  const double scales[] = {0.5, 1.0};
  std::printf("%8s", "features");
  for (const double scale : scales) std::printf("  error (q,k std %.1f)  x sqrt(M)", scale);
  std::printf("\n");
  for (const int64_t m : {16, 64, 256, 1024, 4096}) {
    std::printf("%8lld", static_cast<long long>(m));
    for (const double scale : scales) {
      tinygpt::examples::PerformerErrorSetup setup;
      setup.scale = scale;
      const double error = tinygpt::examples::performer_error(m, setup);
      std::printf("  %19.4f  %9.3f", error, error * std::sqrt(static_cast<double>(m)));
    }
    std::printf("\n");
  }
  return 0;
}
