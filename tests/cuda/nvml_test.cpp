// decodebench's NVML reader (cuda/nvml.cpp) against a stand-in library that has the compute
// process list only as _v3 (tests/fixtures/fake_nvml.cpp, fixture in fake_nvml_fixture.hpp): the
// list read with the record size of the driver's version (32 bytes on 535.43-535.86), a list
// longer than the first buffer, a driver whose version cannot be read, and the telemetry's count
// of other processes. Needs no GPU (built where the CUDA toolkit is: CI runs it); skipped where
// the stand-in was not built next to the test (a test binary copied to another machine).
#include "cuda/nvml.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "core/telemetry.hpp"
#include "tests/cuda/fake_nvml_fixture.hpp"
#include "tests/support/support.hpp"

namespace decodebench::cuda {
namespace {

using FakeNvmlV3 = ::decodebench::testing::FakeNvml;
using ::decodebench::testing::kBusId;
using ::decodebench::testing::ScopedVariable;

TEST_F(FakeNvmlV3, ListsThePidsWithTheDriversRecordSize) {
  ScopedVariable pids("FAKE_NVML_PIDS", "11,22,33");
  // 535.43-535.86 write 32-byte records: read with a 24-byte stride the second PID would be 0.
  for (const auto& [driver, bytes] : {std::pair{"535.54.03", "32"}, std::pair{"535.43.02", "32"},
                                      std::pair{"535.86.10", "32"}, std::pair{"535.104.05", "24"},
                                      std::pair{"530.41.03", "24"}, std::pair{"580.82.07", "24"}}) {
    ScopedVariable d("FAKE_NVML_DRIVER", driver), b("FAKE_NVML_RECORD_BYTES", bytes);
    const nlohmann::json j = nvml_snapshot(kBusId);
    ASSERT_EQ(j["available"], true) << j.dump();
    EXPECT_EQ(j["compute_process_pids"], nlohmann::json({11, 22, 33})) << driver;
    EXPECT_EQ(j["pid"], getpid());
  }
}

TEST_F(FakeNvmlV3, ListLongerThanTheFirstBuffer) {
  std::string list;
  nlohmann::json want = nlohmann::json::array();
  for (int pid = 1000; pid < 1040; ++pid) {  // 40: more than the 32 records asked for first
    list += (list.empty() ? "" : ",") + std::to_string(pid);
    want.push_back(pid);
  }
  ScopedVariable pids("FAKE_NVML_PIDS", list);
  ScopedVariable d("FAKE_NVML_DRIVER", "535.54.03"), b("FAKE_NVML_RECORD_BYTES", "32");
  EXPECT_EQ(nvml_snapshot(kBusId)["compute_process_pids"], want);
}

TEST_F(FakeNvmlV3, UnreadableDriverVersionLeavesTheListUnread) {
  // The _v3 list's record size is not known then: no PIDs are better than wrong ones.
  ScopedVariable pids("FAKE_NVML_PIDS", "11,22,33");
  ScopedVariable d("FAKE_NVML_DRIVER", std::nullopt), b("FAKE_NVML_RECORD_BYTES", "32");
  const nlohmann::json j = nvml_snapshot(kBusId);
  ASSERT_EQ(j["available"], true) << j.dump();
  EXPECT_EQ(j["compute_process_pids"], "unavailable");
  std::string why;
  const auto telemetry = nvml_telemetry(kBusId, &why);
  ASSERT_NE(telemetry, nullptr) << why;
  EXPECT_EQ(telemetry->read().other_processes, -1);
}

TEST_F(FakeNvmlV3, TelemetryCountsTheOtherProcesses) {
  // This process and two others; inside a container (its own PID namespace) the rule takes one
  // listed PID for this process, which gives the same count.
  ScopedVariable pids("FAKE_NVML_PIDS", std::to_string(getpid()) + ",5,6,6");
  ScopedVariable d("FAKE_NVML_DRIVER", "580.82.07"), b("FAKE_NVML_RECORD_BYTES", "24");
  std::string why;
  const auto telemetry = nvml_telemetry(kBusId, &why);
  ASSERT_NE(telemetry, nullptr) << why;
  EXPECT_EQ(telemetry->read().other_processes, 2);
  ScopedVariable alone("FAKE_NVML_PIDS", std::to_string(getpid()));
  EXPECT_EQ(telemetry->read().other_processes, 0);
}

}  // namespace
}  // namespace decodebench::cuda
