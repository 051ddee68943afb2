// Helpers shared by the test executables: temporary folders, running commands (the decodebench
// binary, Python fixture writers) and locating the source tree.
#pragma once

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace decodebench::testing {

// Each location is fixed at configure time and can be overridden by an environment variable of
// the same name (DECODEBENCH_SOURCE_DIR, DECODEBENCH_BIN, DECODEBENCH_PYTHON), so test binaries
// copied to another machine (the GPU host) find their inputs there.

/// The repository root (for scripts/, bench-configs/, tests/data/).
std::filesystem::path source_dir();
/// Path of the built decodebench executable.
std::filesystem::path decodebench_bin();
/// The Python interpreter found by CMake ("" when none).
std::string python();

/// A fresh folder under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::filesystem::path operator/(const std::string& name) const {
    return path_ / name;
  }

 private:
  std::filesystem::path path_;
};

/// Outcome of a child process.
struct CommandResult {
  int exit_code = -1;        ///< exit status when the process exited normally
  int signal = 0;            ///< terminating signal, 0 when it exited normally
  std::string out;           ///< everything written to stdout
  std::string err;           ///< everything written to stderr
  bool interrupted = false;  ///< run_command's Interrupt sent its signal
};

/// Sends a signal to a child of run_command once a condition holds (checked every 5 ms).
struct Interrupt {
  std::function<bool()> when;  ///< e.g. "the temporary file has bytes"
  int signal = SIGINT;
};

/// Runs `argv` (argv[0] is the program path) with stdin from /dev/null and `timeout_s` seconds
/// at most (then SIGKILL, reported through `signal`). Extra environment entries "K=V" are added.
/// The child starts with the default actions of SIGINT, SIGTERM and SIGHUP and none blocked,
/// whatever this process's are (a shell's background job ignores SIGINT). With `interrupt`,
/// its signal is sent once, as soon as its condition holds.
CommandResult run_command(const std::vector<std::string>& argv, int timeout_s = 300,
                          const std::vector<std::string>& env = {},
                          const Interrupt* interrupt = nullptr);

/// Runs the decodebench binary with `args`.
CommandResult run_decodebench(const std::vector<std::string>& args, int timeout_s = 300,
                              const std::vector<std::string>& env = {},
                              const Interrupt* interrupt = nullptr);

/// True when `python()` can `import <module>`; `reason` explains otherwise.
bool python_has_module(const std::string& module, std::string* reason);

/// Reads a whole file (throws std::runtime_error when it cannot).
std::string read_file(const std::filesystem::path& path);

/// What `print` writes to the FILE it is given (a temporary file); throws std::runtime_error when
/// no temporary file can be made.
std::string printed(const std::function<void(FILE*)>& print);

// Sets (or unsets, for nullopt) one variable; restores what the process had on destruction.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* v = std::getenv(name)) before_ = v;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedVariable() {
    if (before_) {
      setenv(name_, before_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> before_;
};

}  // namespace decodebench::testing

/// Skips the current test with the reason when the Python `gguf` package (fixture writer) is
/// missing.
#define DB_REQUIRE_PYTHON_GGUF()                                          \
  do {                                                                    \
    std::string db_reason_;                                               \
    if (!::decodebench::testing::python_has_module("gguf", &db_reason_))  \
      GTEST_SKIP() << "Python package 'gguf' unavailable (" << db_reason_ \
                   << "); run scripts/setup or pip install gguf numpy";   \
  } while (0)
