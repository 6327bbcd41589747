#pragma once
// The caching allocator behind every tensor buffer, defined in memory.cpp beside the statistics
// it keeps (tinygpt/autograd/memory.hpp).
#include <cstddef>
#include <new>

namespace tinygpt::detail {

void* cached_allocate(std::size_t bytes);
void cached_deallocate(void* p, std::size_t bytes) noexcept;

// A standard allocator over the cache, for xtensor containers.
template <class T>
struct CachingAllocator {
  using value_type = T;
  CachingAllocator() = default;
  template <class U>
  CachingAllocator(const CachingAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(cached_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { cached_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const CachingAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const CachingAllocator<U>&) const noexcept { return false; }
};

}  // namespace tinygpt::detail
