#pragma once
// Work items spread over threads (internal to heft::sampling): the identification's generations
// and active exploration's designs share it.
#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace heft::sampling {

/// 0 = every hardware thread (at least 1).
inline int threadCount(int requested) {
  return requested > 0 ? requested
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// Calls work(thread, item) for item = 0 .. count - 1 on min(threads, count) threads (the
/// calling one included), each thread taking the next item not yet taken; the first exception a
/// thread throws is rethrown after every thread has joined.
template <typename Work>
void forEachItem(int count, int threads, Work&& work) {
  std::atomic<int> next{0};
  const int used = std::max(1, std::min(threads, count));
  std::vector<std::exception_ptr> errors(used);
  const auto run = [&](int t) {
    try {
      for (int i = next++; i < count; i = next++) work(t, i);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < used; ++t) pool.emplace_back(run, t);
  run(0);
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace heft::sampling
