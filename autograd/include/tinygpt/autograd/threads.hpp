#pragma once
// One pool of threads: OpenMP's. OpenBLAS is kept single-threaded and called from inside the
// OpenMP team (matmul splits rows and batches across it), so the two never oversubscribe the
// cores -- with both pools active, spinning BLAS threads made training 3x slower here.
namespace tinygpt {

// Sets the OpenMP thread count (OpenBLAS stays at 1); n <= 0 means the number of cores.
void set_num_threads(int n);
int num_threads();

}  // namespace tinygpt
