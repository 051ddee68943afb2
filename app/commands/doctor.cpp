#include "app/commands/doctor.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "app/report/text.hpp"
#include "core/backend_registry.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "core/result/environment.hpp"
#include "core/result/json_file.hpp"

namespace decodebench::app {

namespace {

CudaProvider& require_gpu(const std::string& command) {
  CudaProvider* cuda = cuda_provider();
  if (!cuda)
    throw resource_error(command + ": this build has no CUDA backend (built without nvcc)");
  std::string why;
  if (!cuda->available(&why)) throw resource_error(command + ": " + why);
  return *cuda;
}

std::string text(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return "-";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

/// "1201, 1305", "none", or "unavailable": environment.gpu.nvml.compute_process_pids.
std::string pid_list(const nlohmann::json& nvml) {
  const auto it = nvml.find("compute_process_pids");
  if (it == nvml.end() || !it->is_array()) return "unavailable";
  if (it->empty()) return "none";
  std::string s;
  for (const auto& pid : *it) s += (s.empty() ? "" : ", ") + pid.dump();
  return s;
}

/// The doctor report of a host with no usable GPU: `healthy` false, `gpu` and
/// `replay_matches_eager` null (nothing ran), `verdict` "unhealthy: " + why (the message the
/// command exits with, code 3), no capture matrix.
nlohmann::json no_gpu_report(const std::string& why) {
  return {{"healthy", false},
          {"verdict", "unhealthy: " + why},
          {"gpu", nullptr},
          {"matrix", nlohmann::json::array()},
          {"cross_thread", nlohmann::json::array()},
          {"replay_matches_eager", nullptr},
          {"context_unusable", false},
          {"environment", host_environment()}};
}

void print_doctor(const nlohmann::json& r, FILE* out) {
  const auto& g = r["gpu"];
  fmt::print(out, "GPU      {} (compute capability {}, {} SMs, {:.1f} GiB)\n", text(g, "name"),
             text(g, "cc"), text(g, "sm_count"),
             g.value("memory_bytes", 0.0) / (1024.0 * 1024 * 1024));
  fmt::print(out, "CUDA     driver {} · runtime {}\n", text(g, "driver"), text(g, "runtime"));
  const auto& n = g["nvml"];
  if (n.value("available", false)) {
    fmt::print(out,
               "clocks   SM {} MHz (max {}) · memory {} MHz (max {}) · throttle {} · "
               "persistence {} · ECC {} · {} °C · power limit {} W\n",
               text(n, "sm_clock_mhz"), text(n, "max_sm_clock_mhz"), text(n, "mem_clock_mhz"),
               text(n, "max_mem_clock_mhz"), text(n, "throttle_reasons"),
               text(n, "persistence_mode"), text(n, "ecc"), text(n, "temperature_c"),
               text(n, "power_limit_w"));
    // Timings on a GPU other processes use are not the GPU's alone (docs/ci.md).
    fmt::print(
        out, "users    compute processes on the GPU (NVML, host PIDs): {} · this one: pid {}{}\n",
        pid_list(n), text(n, "pid"),
        n.value("host_pid_namespace", true) ? "" : " (in a container: the list has its host PID)");
  } else {
    fmt::print(out, "NVML     unavailable ({})\n", text(n, "reason"));
  }
  fmt::print(out, "\n{:<14} {:<13} {:<10} {:<7} {}\n", "capture mode", "fault", "outcome", "tokens",
             "failed call / error");
  for (const auto& row : r["matrix"]) {
    std::string detail;
    if (!row.value("failed_call", std::string()).empty()) {
      detail = row["failed_call"].get<std::string>() + " → " + row["error"].get<std::string>();
    } else if (row.contains("error") && row["outcome"] != "captured") {
      detail = text(row, "error");
    }
    const std::string tokens =
        row.contains("tokens_match") ? (row["tokens_match"].get<bool>() ? "same" : "DIFFER") : "-";
    fmt::print(out, "{:<14} {:<13} {:<10} {:<7} {}\n", text(row, "capture_mode"),
               text(row, "fault"), text(row, "outcome"), tokens, detail);
  }
  fmt::print(out, "\ncross-thread (capture on one thread, cudaMalloc on another):\n");
  for (const auto& c : r["cross_thread"]) {
    fmt::print(out, "  {:<13} capture {} · other thread {}\n", text(c, "capture_mode"),
               c["captured"].get<bool>() ? "survived" : "failed (" + text(c, "capture_error") + ")",
               c["other_thread_error"].get<std::string>().empty()
                   ? std::string("ok")
                   : c["other_thread_error"].get<std::string>());
  }
  const auto& replay = r["replay_matches_eager"];
  fmt::print(out, "graph replay vs eager (64 tokens): {}\n",
             replay.is_boolean() ? (replay.get<bool>() ? "identical" : "DIFFERENT")
                                 : "not run (the CUDA context is unusable)");
  fmt::print(out, "verdict: {}\n", r["verdict"].get<std::string>());
}

}  // namespace

void setup_doctor(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("doctor", "Check the GPU, driver and CUDA graph capture health");
  static std::string path;  // CLI11 binds by reference: storage for the process lifetime
  std::string* json_path = &path;
  cmd->add_option("--json", *json_path,
                  "Write the report as JSON to PATH ('-' = stdout); without a usable GPU it holds "
                  "healthy false and the reason, and the command exits 3");
  cmd->callback([json_path, exit_code] {
    if (!json_path->empty()) check_json_destination(*json_path);
    print_unknown_variable_warnings();  // a misspelled switch changes nothing: said before the GPU
    CudaProvider* cuda_or_null = nullptr;
    try {
      cuda_or_null = &require_gpu("doctor");
    } catch (const Error& e) {
      // A fleet check reads the report, so it says why there is none before the exit code (3).
      // A failed write is a warning: the missing GPU stays the error the command exits with.
      if (!json_path->empty()) {
        try {
          write_json_file(*json_path, no_gpu_report(e.what()));
        } catch (const Error& w) {
          std::fprintf(stderr, "decodebench: warning: %s\n", printable_message(w.what()).c_str());
        }
      }
      throw;
    }
    CudaProvider& cuda = *cuda_or_null;
    nlohmann::json r = cuda.doctor();
    r["environment"] = host_environment();
    print_doctor(r, writes_to_stdout(*json_path) ? stderr : stdout);
    if (!json_path->empty()) write_json_file(*json_path, r);
    // An unusable context is exit 5, as for any command (restart the process); else unhealthy
    // is 1.
    *exit_code = r["healthy"].get<bool>()             ? 0
                 : r.value("context_unusable", false) ? static_cast<int>(ExitCode::kContextUnusable)
                                                      : static_cast<int>(ExitCode::kRuntime);
  });
}

void setup_bandwidth(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("bandwidth", "Measure the GPU's streaming read bandwidth");
  struct Options {
    int64_t size_mib = 4096;
    int iterations = 20;
    std::string json_path;
  };
  static Options options;  // CLI11 binds by reference: storage for the process lifetime
  Options* o = &options;
  cmd->add_option("--size-mib", o->size_mib, "Buffer size in MiB (default 4096, >> L2)");
  cmd->add_option("--iterations", o->iterations, "Timed reads (median reported; default 20)");
  cmd->add_option("--json", o->json_path, "Write {bandwidth_gbps, ...} to PATH ('-' = stdout)");
  cmd->callback([o, exit_code] {
    if (o->size_mib < 1 || o->iterations < 1) {
      throw usage_error("bandwidth: --size-mib and --iterations must be >= 1");
    }
    if (!o->json_path.empty()) check_json_destination(o->json_path);
    CudaProvider& cuda = require_gpu("bandwidth");
    const size_t bytes = static_cast<size_t>(o->size_mib) << 20;
    const double gbps = cuda.measure_read_bandwidth_gbps(bytes, o->iterations);
    const nlohmann::json gpu = cuda.environment();
    fmt::print(writes_to_stdout(o->json_path) ? stderr : stdout,
               "{}: streaming read {:.0f} GB/s (median of {} reads of {} MiB)\n",
               gpu.value("name", std::string("GPU")), gbps, o->iterations, o->size_mib);
    if (!o->json_path.empty()) {
      write_json_file(o->json_path, {{"bandwidth_gbps", gbps},
                                     {"bytes", bytes},
                                     {"iterations", o->iterations},
                                     {"gpu", gpu},
                                     {"environment", host_environment()}});
    }
    *exit_code = 0;
  });
}

}  // namespace decodebench::app
