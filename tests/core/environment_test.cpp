// The environment variables a result records (run_variables) and the warnings they bring
// (run_variable_warnings), with the variables set and unset in this process; what a failed host
// allocation reports (host_memory_state).
#include "core/result/environment.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "tests/support/support.hpp"

namespace decodebench {
namespace {

using decodebench::testing::ScopedVariable;

// "out of host memory" says whether RAM or a ulimit -v ran out: the available memory, and the
// address-space limit where one is set (in a child process, so this one keeps its limit).
TEST(HostMemoryState, NamesTheAvailableMemoryAndTheAddressSpaceLimit) {
  rlimit own{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &own), 0);
  if (own.rlim_cur == RLIM_INFINITY) {
    EXPECT_TRUE(
        std::regex_match(host_memory_state(), std::regex(R"([0-9]+\.[0-9]{2} GiB available)")))
        << host_memory_state();
  }
  if (own.rlim_max != RLIM_INFINITY && own.rlim_max < (rlim_t{3} << 30)) {
    GTEST_SKIP() << "this process's hard address-space limit is under 3 GiB";
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit limit{};
    limit.rlim_cur = rlim_t{3} << 30;  // 3 GiB
    limit.rlim_max = own.rlim_max;
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(2);
    const std::string s = host_memory_state();
    _exit(s.find("GiB available; an address-space limit (ulimit -v) of 3.00 GiB applies to this "
                 "process") != std::string::npos
              ? 0
              : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's host_memory_state() lacked the limit";
}

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

// Every DECODEBENCH_* switch the sources read (std::getenv("DECODEBENCH_...") in app/, core/ and
// cuda/, spaces allowed inside the parentheses) is recorded when set: a new switch left out of the
// list would make results that differ in it look alike to `compare`. A name read through a
// constant or a helper is not seen: call getenv with the literal.
TEST(RunVariables, RecordsEverySwitchTheSourcesRead) {
  std::set<std::string> names;
  const std::regex getenv_call(R"re(getenv\(\s*"(DECODEBENCH_[A-Z0-9_]+)"\s*\))re");
  for (const char* dir : {"app", "core", "cuda"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(testing::source_dir() / dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      for (std::sregex_iterator m(text.begin(), text.end(), getenv_call), end; m != end; ++m) {
        names.insert((*m)[1].str());
      }
    }
  }
  // The switches known when this test was written must be found (the scan works).
  for (const char* known : {"DECODEBENCH_GEMV_RING", "DECODEBENCH_GEMV_RING_CTAS",
                            "DECODEBENCH_ATTENTION", "DECODEBENCH_TOKEN_D2H"}) {
    EXPECT_TRUE(names.contains(known)) << known << " not found in the sources";
  }
  for (const std::string& name : names) {
    const ScopedVariable set(name.c_str(), "x");
    EXPECT_EQ(run_variables().value(name, "?"), "x") << name << " is read but not recorded";
  }
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
  // CUDA_LAUNCH_BLOCKING=0 is the default; the cpu backend reads none of them, and says so for
  // decodebench's own switches (which the result still records).
  EXPECT_TRUE(run_variable_warnings({{"CUDA_LAUNCH_BLOCKING", "0"}}, true).empty());
  const auto cpu = run_variable_warnings(vars, /*cuda=*/false);
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(cpu[0],
            "DECODEBENCH_GEMV_RING=16x3: read only by the cuda backend; a cpu run ignores it and "
            "does not check its value");
  EXPECT_TRUE(run_variable_warnings(nlohmann::json::object(), true).empty());
  // A suite says each of them once, for the runs of the backend it holds for.
  for (const auto& each : w) EXPECT_EQ(environment_warning_runs(each), "all cuda runs") << each;
  EXPECT_EQ(environment_warning_runs(cpu[0]), "all cpu runs");
}

// What a suite says once: the environment's warnings, and no other run warning.
TEST(RunVariables, EnvironmentWarningsAreRecognised) {
  const char* env[] = {"DECODEBENCH_GEMV_RNG=16x3", nullptr};
  const auto unknown = unknown_variable_warnings(env);
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(environment_warning_runs(unknown[0]), "all runs");
  EXPECT_EQ(environment_warning_runs("eager: 31 of 128 steps more than 5% above the median"), "");
  EXPECT_EQ(environment_warning_runs("DECODEBENCH_GEMV_RING=16x3"), "");
  // Their texts elsewhere in another warning (a label or value repeating them) are not enough.
  const std::string ignored =
      ": read only by the cuda backend; a cpu run ignores it and does not "
      "check its value";
  EXPECT_EQ(environment_warning_runs("X=1" + ignored), "all cpu runs");  // the form itself
  EXPECT_EQ(environment_warning_runs("[2/3] X=1" + ignored), "");  // no variable's name before =
  EXPECT_EQ(environment_warning_runs(unknown[0] + " (2 runs)"), "");
  EXPECT_EQ(environment_warning_runs("--label 'A=1" + ignored + "' is long"), "");
}

// A variable that looks like decodebench's but that it does not read is named, with the known name
// nearest to it, case aside, where exactly one is nearest within that name's edits (a quarter of
// its length after DECODEBENCH_, 1 to 3); the switches, the scripts', tests' and probes'
// variables, empty values and others' variables are not.
TEST(RunVariables, UnknownDecodebenchVariablesAreNamedWithTheNearestSwitch) {
  const char* env[] = {"DECODEBENCH_GEMV_RING_FEW_GROUP_PER_SM=3",  // an 'S' missing
                       "DECODEBENCH_GEMV_RING=16x3",                // a switch
                       "DECODEBENCH_ATENTION=merge",                // a 'T' missing
                       "DECODEBENCH_BIN=/usr/bin/decodebench",      // the tests' variable
                       "DECODEBENCH_CACHE=/tmp/models",             // scripts/fetch-model's
                       "DECODEBENCH_TRACE=steps.bin",               // the timeline probe's
                       "DECODEBENCH_X_DIGITS=1",                    // a probe build's, not main's
                       "DECODEBENCH_TYPO_EMPTY=",                   // empty: unset
                       "DECODEBENCH_NOEQUALS",
                       "decodebench_gemv_ring_ctas=3",  // lower case
                       "DECODEBNCH_TOKEN_D2H=copy",     // the prefix misspelled
                       "DECODEBENCH_GEMV_RING_LOAS=1",  // 2 edits from _LONG and _CTAS
                       "DECODEBENCH_GPU=0",  // 3 edits from _BIN: too many for so short a name
                       "DECODEBENCH_BIM=/bin/decodebench",  // 1 edit from _BIN
                       "DECODEBENCH_GEMV_RING_MAXCTA=1",    // 2 from _MAX_CTAS (3 allowed)
                       "DECODEBENCH_TOKN_DH=copy",          // 2 from _TOKEN_D2H (2 allowed)
                       "DECODEBENCH_TKN_DH=copy",           // 3 from _TOKEN_D2H: too many
                       "DECODEBNCH_BN=1",                   // 2 from _BIN (1 allowed), no prefix
                       "CUDA_LAUNCH_BLOCKING=1",
                       "XDECODEBENCH_GEMV_RING_TOO_FAR=1",
                       nullptr};
  const auto w = unknown_variable_warnings(env);
  const std::string head = " is set, but decodebench reads no variable of that name";
  const std::string tail =
      "; it is ignored (the measurement switches: docs/measurement-switches.md)";
  const std::vector<std::string> want = {
      "DECODEBENCH_ATENTION" + head + " (did you mean DECODEBENCH_ATTENTION?)" + tail,
      "DECODEBENCH_BIM" + head + " (did you mean DECODEBENCH_BIN?)" + tail,
      "DECODEBENCH_GEMV_RING_FEW_GROUP_PER_SM" + head +
          " (did you mean DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM?)" + tail,
      "DECODEBENCH_GEMV_RING_LOAS" + head + tail,
      "DECODEBENCH_GEMV_RING_MAXCTA" + head + " (did you mean DECODEBENCH_GEMV_RING_MAX_CTAS?)" +
          tail,
      "DECODEBENCH_GPU" + head + tail,
      "DECODEBENCH_TKN_DH" + head + tail,
      "DECODEBENCH_TOKN_DH" + head + " (did you mean DECODEBENCH_TOKEN_D2H?)" + tail,
      "DECODEBENCH_X_DIGITS" + head + tail,
      "DECODEBNCH_TOKEN_D2H" + head + " (did you mean DECODEBENCH_TOKEN_D2H?)" + tail,
      "decodebench_gemv_ring_ctas" + head + " (did you mean DECODEBENCH_GEMV_RING_CTAS?)" + tail,
  };
  EXPECT_EQ(w, want);
  const char* none[] = {nullptr};
  EXPECT_TRUE(unknown_variable_warnings(none).empty());
  EXPECT_TRUE(unknown_variable_warnings(nullptr).empty());
}

}  // namespace
}  // namespace decodebench
