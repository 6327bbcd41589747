#pragma once
// One pool of threads: OpenMP's. The product libraries (oneDNN, OpenBLAS) run single-threaded
// inside the OpenMP team (matmul splits rows and batches across it), so two pools never
// oversubscribe the cores: a library's own spinning threads would take the cores the team waits
// for at every barrier.
namespace tinygpt {

// Sets the OpenMP thread count (OpenBLAS stays at 1); n <= 0 means the count OMP_NUM_THREADS
// gives, as for any OpenMP program, or the number of cores where it gives none. Two programs
// started with OMP_NUM_THREADS=1 on a 2-core machine must not run two threads each.
void set_num_threads(int n);
int num_threads();

// OMP_NUM_THREADS's thread count -- its first value, as libgomp reads a list such as "2,1" --
// or 0 when it is unset or not a positive count (libgomp ignores such a value too).
int omp_num_threads_from_env();

// Subnormal floats (below 2^-126 in f32) read as zero and results that would be subnormal
// written as zero -- the x86 FTZ and DAZ modes -- on the calling thread and every OpenMP thread
// (set_num_threads carries the setting to a larger team), or IEEE subnormals again. Intel cores
// take a microcode assist for each subnormal operand or result, and once the demo's attention
// heads turn sharp their tiny probabilities are full of them (docs/PERFORMANCE.md). The `tinygpt`
// CLI turns this on; the library leaves it off unless asked, as PyTorch's
// set_flush_denormal and TensorFlow (which flushes by default) let a trainer choose. A no-op
// where the CPU has no such modes (flush_denormals() then stays false).
void set_flush_denormals(bool on);
bool flush_denormals();

}  // namespace tinygpt
