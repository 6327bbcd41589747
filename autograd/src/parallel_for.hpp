#pragma once
// Loops shared over the OpenMP team only when they are worth it. Below that they run on the
// calling thread without opening a parallel region at all: libgomp ends even a region of one
// thread (an `if` clause that is false) with a futex wake, a system call for every small op or
// product.
#include <omp.h>

#include <cstdint>

namespace tinygpt::detail {

// body(lo, hi) over [0, count): one stretch per thread of the team when `parallel`, else the
// whole range on the calling thread (also inside a parallel region).
template <class Body>
void for_range(bool parallel, int64_t count, const Body& body) {
  if (!parallel || omp_in_parallel()) return body(int64_t{0}, count);
#pragma omp parallel
  {
    const int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
    body(count * t / team, count * (t + 1) / team);
  }
}

// body(i) for i in [0, count): each i taken by whichever thread of the team comes free when
// `parallel` (a thread woken late takes fewer), else all on the calling thread.
template <class Body>
void for_each_taken(bool parallel, int64_t count, const Body& body) {
  if (!parallel || omp_in_parallel()) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(dynamic)
  for (int64_t i = 0; i < count; ++i) body(i);
}

}  // namespace tinygpt::detail
