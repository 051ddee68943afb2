// The terminal report's kernels line (app/report/terminal.cpp, kernels_line), from hand-built
// kernel mixes.
#include <gtest/gtest.h>

#include <string>

#include "app/report/terminal.hpp"

namespace decodebench::app {
namespace {

// The x' splits that let the next kernel launch only after their PDL wait (round 35) are counted
// in parentheses, and only when there are any; forms replace the kernel names where given.
TEST(TerminalReport, KernelsLineCountsTheSplitsTriggeredAfterTheirWait) {
  KernelMix k;
  k.gemv_per_step = {{"stream", 9}};
  k.tiled_matrices = 2;
  k.x_split_kernels = 7;
  k.x_splits_in_attention = 2;
  EXPECT_EQ(kernels_line(k),
            "kernels  GEMVs per step: stream 9 · 2 matrices in the tiled layout · x' splits: 7 "
            "kernels, 2 in attention");
  k.x_split_kernels_after_wait = 7;
  k.gemv_forms_per_step = {{"stream ring 8x2x2", 6}, {"stream split 1x2", 3}};
  k.attention = "block";
  EXPECT_EQ(kernels_line(k),
            "kernels  GEMVs per step: stream ring 8x2x2 6 · stream split 1x2 3 · 2 matrices in "
            "the tiled layout · x' splits: 7 kernels (7 after their wait), 2 in attention · "
            "attention: block");
  k.x_split_kernels = 1;
  k.x_split_kernels_after_wait = 1;
  k.x_splits_in_attention = 0;
  k.tiled_matrices = 1;
  k.attention.clear();
  EXPECT_EQ(kernels_line(k),
            "kernels  GEMVs per step: stream ring 8x2x2 6 · stream split 1x2 3 · 1 matrix in the "
            "tiled layout · x' splits: 1 kernel (1 after their wait), 0 in attention");
  k.x_split_kernels = 0;
  k.x_split_kernels_after_wait = 0;
  EXPECT_EQ(kernels_line(k),
            "kernels  GEMVs per step: stream ring 8x2x2 6 · stream split 1x2 3 · 1 matrix in the "
            "tiled layout");
}

}  // namespace
}  // namespace decodebench::app
