// decodebench's NVML reader (cuda/nvml.cpp) against a stand-in library (tests/fixtures/
// fake_nvml.cpp) loaded before it under the driver library's soname, so that its dlopen of
// libnvidia-ml.so.1 finds the stand-in: the compute process list read with the record size of the
// driver's version, a list longer than the first buffer, a driver whose version cannot be read,
// and the telemetry's count of other processes. Needs no GPU; skipped where the stand-in was not
// built next to the test (a test binary copied to another machine).
#include "cuda/nvml.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/telemetry.hpp"
#include "tests/support/support.hpp"

namespace decodebench::cuda {
namespace {

using ::decodebench::testing::ScopedVariable;

constexpr const char* kBusId = "00000000:01:00.0";

class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path fake = DECODEBENCH_FAKE_NVML;
    if (!std::filesystem::exists(fake)) GTEST_SKIP() << "no stand-in NVML at " << fake;
    handle_ = dlopen(fake.c_str(), RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    // What decodebench's dlopen will get: the stand-in, unless the driver's came first.
    void* named = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (named != nullptr) dlclose(named);
    ASSERT_EQ(named, handle_) << "another libnvidia-ml.so.1 was loaded before the stand-in";
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }

 private:
  void* handle_ = nullptr;
};

TEST_F(FakeNvml, ListsThePidsWithTheDriversRecordSize) {
  ScopedVariable pids("FAKE_NVML_PIDS", "11,22,33");
  // 535.43-535.86 write 32-byte records: read with a 24-byte stride the second PID would be 0.
  for (const auto& [driver, bytes] : {std::pair{"535.54.03", "32"}, std::pair{"535.104.05", "24"},
                                      std::pair{"580.82.07", "24"}}) {
    ScopedVariable d("FAKE_NVML_DRIVER", driver), b("FAKE_NVML_RECORD_BYTES", bytes);
    const nlohmann::json j = nvml_snapshot(kBusId);
    ASSERT_EQ(j["available"], true) << j.dump();
    EXPECT_EQ(j["compute_process_pids"], nlohmann::json({11, 22, 33})) << driver;
    EXPECT_EQ(j["pid"], getpid());
  }
}

TEST_F(FakeNvml, ListLongerThanTheFirstBuffer) {
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

TEST_F(FakeNvml, UnreadableDriverVersionLeavesTheListUnread) {
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

TEST_F(FakeNvml, TelemetryCountsTheOtherProcesses) {
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
