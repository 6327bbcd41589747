#pragma once
// Tensor buffers come from a caching allocator: a freed buffer is kept and handed to the next
// request of the same size, so a training step that repeats the same shapes allocates nothing
// from the system once warm. These counters let tests and benchmarks check exactly that.
#include <cstddef>
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

// Asks Linux to back the 2 MiB pages that lie wholly inside [p, p + bytes) with huge pages before
// they are first touched (madvise MADV_HUGEPAGE, which Linux's default "madvise" setting for
// transparent huge pages waits for). Filling a buffer of a model's weights then takes one page
// fault per 2 MiB rather than per 4 KiB (on a virtual machine each fault is a trip through the
// hypervisor), and reading it misses the TLB less. Tensor buffers of kHugePageMinBytes or more
// get it from the allocator. Does nothing for smaller ranges or where it is refused.
inline constexpr std::size_t kHugePageMinBytes = std::size_t{4} << 20;
void advise_huge_pages(void* p, std::size_t bytes);
// Asks Linux to back the 4 KiB pages that lie wholly inside [p, p + bytes) with 4 KiB pages when
// they are first touched (madvise MADV_NOHUGEPAGE), undoing advise_huge_pages there. For buffers
// filled once from a file: on a virtual machine a fresh huge page can cost far more to hand out
// than its 512 small pages, depending on what ran before. Does nothing where it is refused.
void advise_small_pages(void* p, std::size_t bytes);

}  // namespace tinygpt
