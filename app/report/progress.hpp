// A one-line progress bar on stderr for runs longer than about 2 s, only on a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace decodebench::app {

/// Renders "label [#####-----] done/total" in place on stderr. Silent until `delay` has passed
/// since construction (short runs print nothing), redrawn at most 10 times a second, and erased by
/// `clear()`. Disabled entirely when stderr is not a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled, std::chrono::milliseconds delay = std::chrono::seconds(2));
  ~ProgressBar() { clear(); }
  void update(const std::string& label, int64_t done, int64_t total);
  void clear();

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
  std::chrono::milliseconds delay_;
};

}  // namespace decodebench::app
