#pragma once
// One knob for both thread pools. OpenMP loops and OpenBLAS calls never run at the same time,
// so giving each the same count uses every core without oversubscribing them.
namespace tinygpt {

// Sets the OpenMP and OpenBLAS thread counts; n <= 0 means the number of cores.
void set_num_threads(int n);
int num_threads();

}  // namespace tinygpt
