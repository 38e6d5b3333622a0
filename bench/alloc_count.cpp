// SPDX-License-Identifier: Apache-2.0
// The counting operator new of alloc_count.h. The other forms (array, nothrow) call this one in
// libstdc++; the aligned ones keep the library's own and are not counted.
#include "alloc_count.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace cardiac::bench {
namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

std::uint64_t allocations() {
  return g_allocations.load(std::memory_order_relaxed);
}

}  // namespace cardiac::bench

void* operator new(std::size_t size) {
  cardiac::bench::g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t /*size*/) noexcept {
  std::free(p);
}
