#pragma once
// A per-op timer on the tape, for finding where a training step spends its time. Off by
// default; when off it costs one branch per recorded op.
//
// Forward: each recorded op is charged the wall time since the previous mark (the previous
// op's record, or a profile_mark), which in a model's forward is the op's own kernel. Backward:
// each node's backward function is timed on its own, and the gradient accumulation between
// nodes goes to "(accumulate)". Only ops recorded with grad mode on are counted, so backward's
// inner ops are not counted twice. Main thread only, like the tape.
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
};

void set_op_profiling(bool on);
// Charges the time since the previous mark to `name` (a forward-column entry), or, with
// nullptr, just restarts the clock. A no-op while profiling is off.
void profile_mark(const char* name);
// Everything charged since the last reset, largest total first.
std::vector<OpProfileEntry> op_profile();
void reset_op_profile();

namespace detail {
extern bool g_op_profiling;
void profile_backward(const char* name, double seconds);
}  // namespace detail

}  // namespace tinygpt
