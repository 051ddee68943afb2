// A test fixture that loads a stand-in libnvidia-ml.so.1 (tests/fixtures/fake_nvml.cpp) before
// decodebench's NVML reader (cuda/nvml.cpp) opens "libnvidia-ml.so.1": glibc matches a library
// already loaded by its soname, so the reader gets the stand-in. The stand-in's path is the test
// target's DECODEBENCH_FAKE_NVML (tests/CMakeLists.txt).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace decodebench::testing {

/// The PCI bus id the tests open (the stand-in takes any).
inline constexpr const char* kBusId = "00000000:01:00.0";

/// Loads the stand-in for each test; skips where it was not built next to the test binary, fails
/// where another libnvidia-ml.so.1 was loaded first (the reader would not get the stand-in).
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path fake = DECODEBENCH_FAKE_NVML;
    if (!std::filesystem::exists(fake)) GTEST_SKIP() << "no stand-in NVML at " << fake;
    handle_ = dlopen(fake.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
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

}  // namespace decodebench::testing
