// A fixed pool of worker threads for the CPU backend's data-parallel loops.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace decodebench::cpu {

/// Runs `fn(begin, end)` over contiguous chunks of [0, n) on `threads` threads (the caller's thread
/// takes the first chunk). Chunk boundaries depend only on n and the thread count, and every index
/// is handled by exactly one call, so per-index results do not depend on scheduling.
class ThreadPool {
 public:
  /// `threads` >= 1; 1 means everything runs on the calling thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  [[nodiscard]] int threads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Splits [0, n) into threads() chunks and blocks until all are done. `min_chunk` avoids
  /// waking threads for tiny loops. Exceptions thrown by `fn` are rethrown here.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                    int64_t min_chunk = 1);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_parts_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace decodebench::cpu
