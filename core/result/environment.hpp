// Facts about the host for the JSON `environment` section.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace decodebench {

/// CPU model name from /proc/cpuinfo ("unknown" when unreadable).
std::string cpu_model_name();

/// Bytes the kernel reports as available (MemAvailable in /proc/meminfo), or -1 when unknown.
int64_t available_host_memory_bytes();

/// Throws decodebench::Error (exit 3) naming both numbers (bytes and GiB) when `needed` bytes for
/// `what` exceed available_host_memory_bytes() (not checked when that is unknown) or what this
/// process's address-space limit (RLIMIT_AS, ulimit -v) leaves above its present size (VmSize).
void check_host_memory(int64_t needed, const std::string& what);

/// What a failed host allocation ran into, for its message: "3.52 GiB available" (MemAvailable),
/// then, where this process has an address-space limit (RLIMIT_AS), "an address-space limit
/// (ulimit -v) of 0.14 GiB applies to this process"; parts that cannot be read are left out (empty
/// when none can).
std::string host_memory_state();

/// Total host memory (MemTotal), or -1 when unknown.
int64_t total_host_memory_bytes();

/// The current UTC time as ISO-8601 with a Z suffix, e.g. "2026-11-30T09:22:51Z".
std::string utc_timestamp();

/// The environment variables, of those set in this process, that change which code a run executes
/// or how its GPU is timed: decodebench's own measurement switches (DECODEBENCH_GEMV_RING and the
/// other DECODEBENCH_* variables the sources read: kernel forms, the token's way to the host) and
/// CUDA runtime switches such as
/// CUDA_LAUNCH_BLOCKING, CUDA_VISIBLE_DEVICES and CUDA_MODULE_LOADING (the list: kRunVariables in
/// environment.cpp). {name: value}; an empty object when none is set.
nlohmann::json run_variables();

/// Warnings for the run_variables() `variables` that make GPU timings unlike a default run:
/// CUDA_LAUNCH_BLOCKING other than 0 (each launch waits for its kernel), each DECODEBENCH_*
/// switch (another GEMV kernel form) and an MPS client's thread limit. Without `cuda` (the backend
/// that reads them) only one per DECODEBENCH_* switch: the run ignores it (a bad value included).
std::vector<std::string> run_variable_warnings(const nlohmann::json& variables, bool cuda);

/// Warnings for the variables set (non-empty) in `env` (a null-terminated NAME=VALUE array such
/// as `environ`) that look like decodebench's but that it does not read: a name that starts with
/// DECODEBENCH_ (any case) or lies, case aside, within a known name's edits of it (Damerau-
/// Levenshtein; a quarter of the known name's length after DECODEBENCH_, 1 to 3), and is neither a
/// measurement switch of run_variables() nor a variable of the scripts, tests and probes
/// (DECODEBENCH_BIN, _CACHE, _TRACE, ...). A misspelled switch would otherwise leave a run at its
/// defaults without a word. Each warning names the variable, and the known name nearest to it
/// within those edits where exactly one is nearest; sorted by name. Empty when none.
std::vector<std::string> unknown_variable_warnings(const char* const* env);

/// Which runs of one process a warning of run_variable_warnings() or unknown_variable_warnings()
/// holds for alike, as its text depends only on the environment and the backend: "all runs" (an
/// unknown variable), "all cuda runs" (a switch the CUDA backend reads, CUDA_LAUNCH_BLOCKING, an
/// MPS share) or "all cpu runs" (a switch the CPU backend ignores). Empty for any other warning:
/// one that does not have those warnings' form (a name, then their fixed text at the end).
/// A suite or sweep says such a warning once (every run's JSON still records it).
std::string_view environment_warning_runs(std::string_view warning);

/// {host, cpu, cores, memory_bytes, memory_available_bytes, os, kernel, timestamp, variables}.
nlohmann::json host_environment();

}  // namespace decodebench
