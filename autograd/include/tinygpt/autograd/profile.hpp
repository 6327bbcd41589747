#pragma once
// A per-op timer on the tape, for finding where a training step spends its time. Off by
// default; when off it costs one branch per recorded op.
//
// Forward: each recorded op is charged the wall time since the previous mark (the previous
// op's record, or a profile_mark), which in a model's forward is the op's own kernel. Backward:
// each node's backward function is timed on its own, and the gradient accumulation between
// nodes goes to "(accumulate)". Only ops recorded with grad mode on are counted, so backward's
// inner ops are not counted twice. Main thread only, like the tape.
//
// Products: each product the ops run through the panels of their matrix products (linear,
// gelu_linear, matmul) is timed on its own, whole (all its panels, and the rounding or packing of
// its operands), and charged like the time to the op that ran it, forward or backward. Its FLOPs,
// and those a fused op reports (profile_flops), also go to the op's entry.
#include <cstdint>
#include <string>
#include <vector>

namespace tinygpt {

struct OpProfileEntry {
  std::string name;
  double forward_seconds = 0.0;
  double backward_seconds = 0.0;
  int64_t forward_calls = 0;
  int64_t backward_calls = 0;
  double forward_flops = 0.0;  // of the products counted (0: none)
  double backward_flops = 0.0;
  // Of the op's time, what its products took, timed one by one (the rest is its other passes).
  double forward_product_seconds = 0.0;
  double backward_product_seconds = 0.0;
};

// One product shape of one op and direction: C (m, n) = op(A) op(B), `batch` of them.
struct ProductProfileEntry {
  std::string op;
  bool backward = false;
  bool ta = false, tb = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool bias = false;
  bool a_rounded = false, b_rounded = false;  // handed to the product rounded to bf16 already
  double seconds = 0.0;
  int64_t calls = 0;
  double flops() const { return 2.0 * static_cast<double>(batch * m * n * k) * calls; }
};

void set_op_profiling(bool on);
// Charges the time since the previous mark to `name` (a forward-column entry), or, with
// nullptr, just restarts the clock. A no-op while profiling is off.
void profile_mark(const char* name);
// Everything charged since the last reset, largest total first.
std::vector<OpProfileEntry> op_profile();
// The products since the last reset, largest total time first.
std::vector<ProductProfileEntry> product_profile();
void reset_op_profile();

// The best of `repeats` runs of one product of `e`'s shape and operand forms on random values,
// alone, on the backend the current precision picks, in seconds: the rate the product's kernel
// reaches outside a step, for comparing with its rate inside it. Each run finds its operands
// and output in the caches the run before left them in, or with `cold` in none: flushed to
// memory first, as a step's product finds an activation another op wrote megabytes ago. A
// product that runs in the step near its cold rate and far below its warm one waits on memory.
double time_product_alone(const ProductProfileEntry& e, int repeats, bool cold = false);

namespace detail {
extern bool g_op_profiling;
void profile_backward(const char* name, double seconds);
// A product that just ran, for the op recorded (or backward function finished) next.
void profile_product(const ProductProfileEntry& product);
// FLOPs a fused op ran (e.g. attention's products), for its entry likewise.
void profile_flops(double flops);
}  // namespace detail

}  // namespace tinygpt
