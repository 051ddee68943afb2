// The terminal report's kernels line (app/report/terminal.cpp, kernels_line), from hand-built
// kernel mixes.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "app/report/terminal.hpp"
#include "tests/support/support.hpp"

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

// Layers that ran different attention forms (a layer writing the o projection's x' split keeps
// the cluster merge, the others push) are each counted; one form is named alone.
TEST(TerminalReport, AttentionFormsPerLayerAreCountedWhenTheyDiffer) {
  using Forms = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(describe_attention_forms(Forms{}), "");
  EXPECT_EQ(describe_attention_forms(Forms{{"cluster-push 2", 30}}), "cluster-push 2");
  EXPECT_EQ(describe_attention_forms(Forms{{"cluster 4", 20}, {"cluster-push 4", 8}}),
            "cluster 4 (20 layers), cluster-push 4 (8 layers)");
  EXPECT_EQ(describe_attention_forms(Forms{{"block", 1}, {"split-kv 4", 3}}),
            "block (1 layer), split-kv 4 (3 layers)");
  KernelMix k;
  k.gemv_per_step = {{"stream", 9}};
  k.attention = describe_attention_forms(Forms{{"cluster 4", 20}, {"cluster-push 4", 8}});
  EXPECT_EQ(kernels_line(k),
            "kernels  GEMVs per step: stream 9 · 0 matrices in the tiled layout · attention: "
            "cluster 4 (20 layers), cluster-push 4 (8 layers)");
}

// The whole report prints the same line; a report without passes (never the runner's) prints its
// header and table heading and stops instead of reading a pass that is not there.
TEST(TerminalReport, ReportWithoutPassesPrintsItsKernelsLine) {
  RunReport r;
  r.kernels.gemv_per_step = {{"stream", 9}};
  r.kernels.x_split_kernels = 3;
  r.kernels.x_split_kernels_after_wait = 2;
  const std::string text =
      ::decodebench::testing::printed([&](FILE* f) { print_run_report(r, f, false); });
  EXPECT_NE(text.find(kernels_line(r.kernels) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x' splits: 3 kernels (2 after their wait), 0 in attention"),
            std::string::npos)
      << text;
  EXPECT_THROW(headline_pass(r), Error);
}

}  // namespace
}  // namespace decodebench::app
