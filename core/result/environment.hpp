// Facts about the host for the JSON `environment` section.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace decodebench {

/// CPU model name from /proc/cpuinfo ("unknown" when unreadable).
std::string cpu_model_name();

/// Bytes the kernel reports as available (MemAvailable in /proc/meminfo), or -1 when unknown.
int64_t available_host_memory_bytes();

/// Throws decodebench::Error (exit 3) naming both numbers (bytes and GiB) when `needed` bytes for
/// `what` exceed available_host_memory_bytes() (not checked when that is unknown) or what this
/// process's address-space limit (RLIMIT_AS, ulimit -v) leaves above its present size (VmSize).
void check_host_memory(int64_t needed, const std::string& what);

/// Total host memory (MemTotal), or -1 when unknown.
int64_t total_host_memory_bytes();

/// The current UTC time as ISO-8601 with a Z suffix, e.g. "2026-11-30T09:22:51Z".
std::string utc_timestamp();

/// {host, cpu, cores, memory_bytes, memory_available_bytes, os, kernel, timestamp}.
nlohmann::json host_environment();

}  // namespace decodebench
