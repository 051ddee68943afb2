#include "app/report/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace decodebench::app {

ProgressBar::ProgressBar(bool enabled, std::chrono::milliseconds delay)
    : enabled_(enabled && isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      delay_(delay) {}

void ProgressBar::update(const std::string& label, int64_t done, int64_t total) {
  if (!enabled_ || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < delay_) return;
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && done < total) return;
  last_ = now;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '-');
  std::fprintf(stderr, "\r  %-14s [%s] %lld/%lld", label.c_str(), bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total));
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r%80s\r", "");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace decodebench::app
