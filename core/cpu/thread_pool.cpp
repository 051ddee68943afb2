#include "core/cpu/thread_pool.hpp"

#include <algorithm>

namespace decodebench::cpu {

ThreadPool::ThreadPool(int threads) {
  const int extra = std::max(threads, 1) - 1;
  workers_.reserve(extra);
  for (int i = 0; i < extra; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {
// Chunk `part` of `parts` over [0, n): equal sizes, the remainder spread over the first chunks.
void chunk_bounds(int64_t n, int parts, int part, int64_t* begin, int64_t* end) {
  const int64_t base = n / parts;
  const int64_t rem = n % parts;
  *begin = part * base + std::min<int64_t>(part, rem);
  *end = *begin + base + (part < rem ? 1 : 0);
}
}  // namespace

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                              int64_t min_chunk) {
  if (n <= 0) return;
  const int64_t max_parts = std::max<int64_t>(1, n / std::max<int64_t>(min_chunk, 1));
  const int parts = static_cast<int>(std::min<int64_t>(threads(), max_parts));
  if (parts == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_parts_ = parts;
    pending_ = parts - 1;
    error_ = nullptr;
    ++generation_;
  }
  start_cv_.notify_all();
  int64_t b, e;
  chunk_bounds(n, parts, 0, &b, &e);
  std::exception_ptr local;
  try {
    fn(b, e);
  } catch (...) {
    local = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
  if (local) std::rethrow_exception(local);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int parts;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      parts = job_parts_;
    }
    if (index < parts) {
      int64_t b, e;
      chunk_bounds(n, parts, index, &b, &e);
      std::exception_ptr err;
      try {
        (*job)(b, e);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (err && !error_) error_ = err;
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace decodebench::cpu
