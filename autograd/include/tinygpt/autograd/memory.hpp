#pragma once
// Tensor buffers come from a caching allocator: a freed buffer is kept and handed to the next
// request of the same size, so a training step that repeats the same shapes allocates nothing
// from the system once warm. These counters let tests and benchmarks check exactly that.
#include <cstdint>

namespace tinygpt {

struct MemoryStats {
  int64_t system_allocations = 0;  // buffers obtained from the system allocator so far
  int64_t cache_hits = 0;          // requests served from the cache
  int64_t bytes_in_use = 0;        // held by live tensors
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_cached = 0;        // freed, kept for reuse
};

MemoryStats memory_stats();
void reset_peak_memory();
// Returns every cached buffer to the system.
void empty_cache();

}  // namespace tinygpt
