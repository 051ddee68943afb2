// decodebench's NVML reader (cuda/nvml.cpp) against a stand-in library with the compute process
// list as _v2 (24-byte records on every driver) and as _v3 writing 16-byte records
// (tests/fixtures/fake_nvml.cpp built with FAKE_NVML_V2): the reader must take _v2, as it does on
// the drivers of today, and so read every PID right whatever the driver's version says. Needs no
// GPU; skipped where the stand-in was not built next to the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cuda/nvml.hpp"
#include "tests/cuda/fake_nvml_fixture.hpp"
#include "tests/support/support.hpp"

namespace decodebench::cuda {
namespace {

using FakeNvmlV2 = ::decodebench::testing::FakeNvml;
using ::decodebench::testing::kBusId;
using ::decodebench::testing::ScopedVariable;

TEST_F(FakeNvmlV2, ReadsTheV2ListWhereBothExist) {
  ScopedVariable pids("FAKE_NVML_PIDS", "11,22,33");
  for (const char* driver : {"535.54.03", "550.54.15", "580.82.07"}) {
    ScopedVariable d("FAKE_NVML_DRIVER", driver);
    const nlohmann::json j = nvml_snapshot(kBusId);
    ASSERT_EQ(j["available"], true) << j.dump();
    EXPECT_EQ(j["compute_process_pids"], nlohmann::json({11, 22, 33})) << driver;
  }
  ScopedVariable d("FAKE_NVML_DRIVER", "580.82.07");
  ScopedVariable with_self("FAKE_NVML_PIDS", std::to_string(getpid()) + ",7");
  std::string why;
  const auto telemetry = nvml_telemetry(kBusId, &why);
  ASSERT_NE(telemetry, nullptr) << why;
  EXPECT_EQ(telemetry->read().other_processes, 1);
}

}  // namespace
}  // namespace decodebench::cuda
