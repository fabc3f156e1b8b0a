#pragma once
/// \file Counts every heap allocation of the process, for the "allocates nothing" tests.
///
/// Eigen's malloc guard (EIGEN_RUNTIME_NO_MALLOC) is an eigen_assert: compiled out in Release and
/// blind to code instantiated in other translation units (heft's libraries, libpinocchio).
/// Interposing glibc's malloc / calloc / realloc counts everything instead (operator new and
/// Eigen both end in malloc). Include this header in exactly one file of a test executable.
#include <cstddef>

#if defined(__GLIBC__)
extern "C" void* __libc_malloc(std::size_t size);
extern "C" void* __libc_calloc(std::size_t n, std::size_t size);
extern "C" void* __libc_realloc(void* p, std::size_t size);
// External linkage, so that the compiler cannot cache them across calls into the libraries.
bool g_count_mallocs = false;
long g_malloc_count = 0;
extern "C" void* malloc(std::size_t size) noexcept {
  if (g_count_mallocs) ++g_malloc_count;
  return __libc_malloc(size);
}
extern "C" void* calloc(std::size_t n, std::size_t size) noexcept {
  if (g_count_mallocs) ++g_malloc_count;
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, std::size_t size) noexcept {
  if (g_count_mallocs) ++g_malloc_count;
  return __libc_realloc(p, size);
}
#define HEFT_CAN_COUNT_MALLOCS 1
#endif

namespace heft::test {

/// Heap allocations made by f() (0 where allocations cannot be counted: check
/// HEFT_CAN_COUNT_MALLOCS before asserting).
template <typename F>
long countMallocs(F&& f) {
#if defined(HEFT_CAN_COUNT_MALLOCS)
  g_malloc_count = 0;
  g_count_mallocs = true;
  f();
  g_count_mallocs = false;
  return g_malloc_count;
#else
  f();
  return 0;
#endif
}

}  // namespace heft::test
