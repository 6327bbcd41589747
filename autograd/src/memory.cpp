// The caching allocator behind every tensor buffer (caching_allocator.hpp, private) and the
// statistics it keeps (tinygpt/autograd/memory.hpp).
#include "caching_allocator.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tinygpt/autograd/memory.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define TINYGPT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TINYGPT_ASAN 1
#endif
#endif
#ifdef TINYGPT_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace tinygpt::detail {
namespace {

// Under AddressSanitizer a cached block stays poisoned until it is handed out again, and the
// padding past each request is poisoned too, so reads through a stale tensor or past a
// tensor's end are reported as they would be without the cache.
void poison(void* p, std::size_t bytes) {
#ifdef TINYGPT_ASAN
  ASAN_POISON_MEMORY_REGION(p, bytes);
#else
  (void)p, (void)bytes;
#endif
}

void unpoison(void* p, std::size_t bytes) {
#ifdef TINYGPT_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#else
  (void)p, (void)bytes;
#endif
}

// Opens the first `bytes` of a block of `size` for use and keeps the padding after them closed.
void* hand_out(void* p, std::size_t bytes, std::size_t size) {
  unpoison(p, bytes);
  poison(static_cast<char*>(p) + bytes, size - bytes);
  return p;
}

constexpr std::size_t kAlignment = 64;  // a cache line; also what AVX-512 loads like
constexpr std::size_t kHugePage = std::size_t{2} << 20;
// The cache holds at most twice the peak bytes in use (at least 256 MiB, at most 4 GiB). A loop
// that repeats its shapes never reaches that: everything it frees, it held at once. A loop whose
// shapes keep changing, as generation's growing key/value cache does one position at a time,
// would otherwise fill the cache with blocks no request fits again (memory quadratic in the
// tokens generated); past the bound the stale blocks go back to the system.
constexpr int64_t kMinCachedBytes = int64_t{256} << 20;
constexpr int64_t kMaxCachedBytes = int64_t{4} << 30;

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // by rounded size
  MemoryStats stats;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors may outlive static destructors
  return *c;
}

std::size_t rounded(std::size_t bytes) {
  return (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
}

// Returns every cached block to the system; the caller holds the mutex.
void release_cached(Cache& c) {
  for (auto& [size, blocks] : c.free_blocks) {
    for (void* p : blocks) {
      unpoison(p, size);
      std::free(p);
    }
  }
  c.free_blocks.clear();
  c.stats.bytes_cached = 0;
}

}  // namespace

void* cached_allocate(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.stats.bytes_in_use += static_cast<int64_t>(size);
    c.stats.peak_bytes_in_use = std::max(c.stats.peak_bytes_in_use, c.stats.bytes_in_use);
    auto it = c.free_blocks.find(size);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.stats.bytes_cached -= static_cast<int64_t>(size);
      ++c.stats.cache_hits;
      return hand_out(p, bytes, size);
    }
    ++c.stats.system_allocations;
  }
  // A large buffer starts on a huge page, so that all of it but its tail can be one.
  const bool huge = size >= kHugePageMinBytes;
  void* p = huge ? std::aligned_alloc(kHugePage, (size + kHugePage - 1) / kHugePage * kHugePage)
                 : std::aligned_alloc(kAlignment, size);
  if (p == nullptr) throw std::bad_alloc();
  if (huge) advise_huge_pages(p, size);
  return hand_out(p, bytes, size);
}

void cached_deallocate(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  const std::size_t size = rounded(bytes);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.bytes_in_use -= static_cast<int64_t>(size);
  unpoison(p, size);  // the system allocator may touch any of it
  const int64_t bound =
      std::min(kMaxCachedBytes, std::max(kMinCachedBytes, 2 * c.stats.peak_bytes_in_use));
  if (c.stats.bytes_cached + static_cast<int64_t>(size) > bound) release_cached(c);
  if (static_cast<int64_t>(size) > bound) {
    std::free(p);
    return;
  }
  try {
    c.free_blocks[size].push_back(p);
    c.stats.bytes_cached += static_cast<int64_t>(size);
    poison(p, size);
  } catch (...) {
    std::free(p);
  }
}

}  // namespace tinygpt::detail

namespace tinygpt {

namespace {

// madvise(advice) on the pages of `page` bytes that lie wholly inside [p, p + bytes).
void advise_whole_pages(void* p, std::size_t bytes, std::uintptr_t page, int advice) {
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + bytes) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, advice);
}

}  // namespace

void advise_huge_pages(void* p, std::size_t bytes) {
  if (bytes < kHugePageMinBytes) return;
  advise_whole_pages(p, bytes, detail::kHugePage, MADV_HUGEPAGE);
}

void advise_small_pages(void* p, std::size_t bytes) {
  advise_whole_pages(p, bytes, 4096, MADV_NOHUGEPAGE);
}

MemoryStats memory_stats() {
  auto& c = detail::cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

void reset_peak_memory() {
  auto& c = detail::cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
}

void empty_cache() {
  auto& c = detail::cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  detail::release_cached(c);
}

}  // namespace tinygpt
