// The environment variables a result records (run_variables) and the warnings they bring
// (run_variable_warnings), with the variables set and unset in this process.
#include "core/result/environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "tests/support/support.hpp"

namespace decodebench {
namespace {

using decodebench::testing::ScopedVariable;

TEST(RunVariables, RecordsTheListedVariablesThatAreSetAndNoOthers) {
  const ScopedVariable ring("DECODEBENCH_GEMV_RING", "0");
  const ScopedVariable attention("DECODEBENCH_ATTENTION", "merge");
  const ScopedVariable token("DECODEBENCH_TOKEN_D2H", "copy");
  const ScopedVariable blocking("CUDA_LAUNCH_BLOCKING", std::nullopt);
  const ScopedVariable visible("CUDA_VISIBLE_DEVICES", "");  // set, though empty: still recorded
  const ScopedVariable unrelated("CUDA_HOME", "/usr/local/cuda");
  const nlohmann::json vars = run_variables();
  EXPECT_EQ(vars.value("DECODEBENCH_GEMV_RING", "?"), "0");
  EXPECT_EQ(vars.value("DECODEBENCH_ATTENTION", "?"), "merge");
  EXPECT_EQ(vars.value("DECODEBENCH_TOKEN_D2H", "?"), "copy");
  EXPECT_EQ(vars.value("CUDA_VISIBLE_DEVICES", "?"), "");
  EXPECT_FALSE(vars.contains("CUDA_LAUNCH_BLOCKING"));
  EXPECT_FALSE(vars.contains("CUDA_HOME"));
  EXPECT_EQ(host_environment()["variables"], vars);
  // An empty switch is its default: not recorded (an empty CUDA_VISIBLE_DEVICES hides every GPU,
  // so it is).
  const ScopedVariable empty_ring("DECODEBENCH_GEMV_RING", "");
  EXPECT_FALSE(run_variables().contains("DECODEBENCH_GEMV_RING"));
}

TEST(RunVariables, WarningsNameTheSwitchesThatChangeGpuTimings) {
  const nlohmann::json vars = {{"CUDA_LAUNCH_BLOCKING", "1"},
                               {"DECODEBENCH_GEMV_RING", "16x3"},
                               {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50"},
                               {"CUDA_VISIBLE_DEVICES", "1"}};
  const auto w = run_variable_warnings(vars, /*cuda=*/true);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].rfind("CUDA_LAUNCH_BLOCKING=1: every launch waits", 0), 0u) << w[0];
  EXPECT_EQ(w[1].rfind("DECODEBENCH_GEMV_RING=16x3: a measurement switch picks a kernel form", 0),
            0u)
      << w[1];
  EXPECT_EQ(w[2].rfind("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50: ", 0), 0u) << w[2];
  // CUDA_LAUNCH_BLOCKING=0 is the default; the cpu backend reads none of them.
  EXPECT_TRUE(run_variable_warnings({{"CUDA_LAUNCH_BLOCKING", "0"}}, true).empty());
  EXPECT_TRUE(run_variable_warnings(vars, /*cuda=*/false).empty());
  EXPECT_TRUE(run_variable_warnings(nlohmann::json::object(), true).empty());
}

}  // namespace
}  // namespace decodebench
