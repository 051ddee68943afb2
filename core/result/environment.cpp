#include "core/result/environment.hpp"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"

namespace decodebench {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  }
  return "unknown";
}

namespace {
// The number of the "key: N kB" line of a /proc file (/proc/meminfo, /proc/self/status); -1 when
// absent.
int64_t meminfo_kb(const std::string& key, const char* file = "/proc/meminfo") {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream ss(line.substr(key.size() + 1));
      int64_t kb = -1;
      ss >> kb;
      return kb;
    }
  }
  return -1;
}

std::string os_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
}
}  // namespace

int64_t available_host_memory_bytes() {
  const int64_t kb = meminfo_kb("MemAvailable");
  return kb < 0 ? -1 : kb * 1024;
}

namespace {
std::string gib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}
}  // namespace

void check_host_memory(int64_t needed, const std::string& what) {
  const int64_t available = available_host_memory_bytes();
  if (available >= 0 && needed > available) {
    throw resource_error("not enough host memory: " + what + " needs " + std::to_string(needed) +
                         " bytes (" + gib(needed) + "), " + std::to_string(available) + " bytes (" +
                         gib(available) + ") are available");
  }
  // A limit on this process's address space (ulimit -v) fails the allocation with no numbers:
  // its headroom is checked as well.
  rlimit limit{};
  const int64_t vm_size = meminfo_kb("VmSize", "/proc/self/status");
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && vm_size >= 0) {
    const int64_t headroom = static_cast<int64_t>(limit.rlim_cur) - vm_size * 1024;
    if (needed > headroom) {
      throw resource_error("not enough host memory: " + what + " needs " + std::to_string(needed) +
                           " bytes (" + gib(needed) + "), " +
                           std::to_string(std::max<int64_t>(0, headroom)) + " bytes (" +
                           gib(std::max<int64_t>(0, headroom)) +
                           ") are left under this process's address-space limit (ulimit -v)");
    }
  }
}

std::string host_memory_state() {
  std::string out;
  if (const int64_t available = available_host_memory_bytes(); available >= 0) {
    out = gib(available) + " available";
  }
  // The limit, not the present size: by the time this runs the failed request is unwound.
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    out += (out.empty() ? "" : "; ") + std::string("an address-space limit (ulimit -v) of ") +
           gib(static_cast<int64_t>(limit.rlim_cur)) + " applies to this process";
  }
  return out;
}

int64_t total_host_memory_bytes() {
  const int64_t kb = meminfo_kb("MemTotal");
  return kb < 0 ? -1 : kb * 1024;
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {
// Read by decodebench or by the CUDA runtime and driver; each changes what runs or what a timing
// means, so a result records the ones set and `compare` names those that differ. A new
// DECODEBENCH_* switch belongs here.
constexpr const char* kRunVariables[] = {
    "DECODEBENCH_GEMV_RING",             // GEMV kernel form (measurements)
    "DECODEBENCH_GEMV_RING_LONG",        // GEMV kernel form for long rows (measurements)
    "DECODEBENCH_GEMV_RING_CTAS",        // ring GEMV registers per CTA (measurements)
    "DECODEBENCH_GEMV_RING_MAX_CTAS",    // ring GEMV CTAs per SM (measurements)
    "DECODEBENCH_GEMV_RING_GGUF",        // which 32-column GGUF-block matrices take the ring GEMV
    "DECODEBENCH_GEMV_RING_Q6_K",        // Q6_K rows on the ring GEMV (measurements)
    "DECODEBENCH_GEMV_RING_FEW_GROUPS",  // ring GEMV form, few row groups (measurements)
    // what "few row groups" means (measurements)
    "DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM",
    "DECODEBENCH_GEMV_PRESPLIT_MIN",      // smallest GEMV on a pre-split x' (measurements)
    "DECODEBENCH_GEMV_DIRECT_SPREAD",     // float GEMVs' row pairs over the grid (measurements)
    "DECODEBENCH_ATTENTION",              // attention kernel form (measurements)
    "DECODEBENCH_ATTENTION_TRIGGER",      // where attention triggers PDL (measurements)
    "DECODEBENCH_TOKEN_D2H",              // how the token reaches the host (measurements)
    "DECODEBENCH_SPLIT_TRIGGER",          // where x' split kernels trigger PDL (measurements)
    "CUDA_LAUNCH_BLOCKING",               // every launch synchronous
    "CUDA_VISIBLE_DEVICES",               // which GPU is device 0
    "CUDA_DEVICE_ORDER",                  // how devices are numbered
    "CUDA_DEVICE_MAX_CONNECTIONS",        // hardware work queues per device
    "CUDA_MODULE_LOADING",                // lazy or eager kernel loading
    "CUDA_FORCE_PTX_JIT",                 // kernels compiled from PTX at load
    "CUDA_DISABLE_PTX_JIT",               //
    "CUDA_CACHE_DISABLE",                 // no JIT cache
    "CUDA_MPS_PIPE_DIRECTORY",            // a client of an MPS server (shared GPU)
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",  // an MPS client's share of the SMs
};
}  // namespace

namespace {
// The fixed parts of unknown_variable_warnings()'s texts: after the variable's name, and at the
// end (environment_warning_runs() recognises them).
constexpr std::string_view kUnknownVariableWarning =
    " is set, but decodebench reads no variable of that name";
constexpr std::string_view kUnknownVariableEnd =
    "; it is ignored (the measurement switches: docs/measurement-switches.md)";

// DECODEBENCH_* variables that the scripts, tests and probes read, not the binary: set in a
// user's shell, they are no mistake (scripts/fetch-model, scripts/test, tests/CMakeLists.txt,
// tests/, docs/probes/kernel-timeline.patch's DECODEBENCH_TRACE).
constexpr const char* kToolVariables[] = {
    "DECODEBENCH_BIN",           "DECODEBENCH_SOURCE_DIR", "DECODEBENCH_BUILD_DIR",
    "DECODEBENCH_PYTHON",        "DECODEBENCH_CACHE",      "DECODEBENCH_SMOLLM2",
    "DECODEBENCH_GGUF_FIXTURES", "DECODEBENCH_TRACE",
};

// The most edits at which `name` counts as a misspelling of `known`: a quarter of the length of
// known's part after "DECODEBENCH_", at least 1 and at most 3, so a short name such as
// DECODEBENCH_BIN is not the "nearest" to every short unknown one (DECODEBENCH_GPU).
int misspelling_edits(std::string_view known) {
  constexpr std::string_view kPrefix = "DECODEBENCH_";
  const size_t rest = known.size() - std::min(known.size(), kPrefix.size());
  return std::clamp(static_cast<int>(rest / 4), 1, 3);
}
}  // namespace

std::vector<std::string> unknown_variable_warnings(const char* const* env) {
  std::vector<std::string> known;
  for (const char* name : kRunVariables) {
    if (std::string_view(name).starts_with("DECODEBENCH_")) known.emplace_back(name);
  }
  known.insert(known.end(), std::begin(kToolVariables), std::end(kToolVariables));
  std::vector<std::pair<std::string, std::string>> found;  // {name, nearest known name or ""}
  for (const char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq + 1 == entry.size()) continue;  // empty: unset
    const std::string name(entry.substr(0, eq));
    if (std::ranges::find(known, name) != known.end()) continue;
    std::string upper = name;
    std::ranges::transform(upper, upper.begin(), [](unsigned char c) { return std::toupper(c); });
    // The nearest known name within its misspelling_edits, where exactly one is nearest.
    std::string nearest;
    int best = std::numeric_limits<int>::max();
    bool tie = false;
    for (const std::string& k : known) {
      const int d = edit_distance(upper, k, 3);
      if (d > misspelling_edits(k)) continue;
      if (d < best) {
        best = d;
        nearest = k;
        tie = false;
      } else if (d == best) {
        tie = true;
      }
    }
    const bool near = !nearest.empty();
    if (!upper.starts_with("DECODEBENCH_") && !near) continue;  // someone else's variable
    found.emplace_back(name, near && !tie ? nearest : std::string());
  }
  std::ranges::sort(found);
  std::vector<std::string> out;
  for (const auto& [name, nearest] : found) {
    out.push_back(name + std::string(kUnknownVariableWarning) +
                  (nearest.empty() ? "" : " (did you mean " + nearest + "?)") +
                  std::string(kUnknownVariableEnd));
  }
  return out;
}

nlohmann::json run_variables() {
  nlohmann::json vars = nlohmann::json::object();
  for (const char* name : kRunVariables) {
    const char* v = std::getenv(name);
    // decodebench's switches read an empty value as unset (the default form).
    if (v == nullptr || (*v == '\0' && std::string_view(name).starts_with("DECODEBENCH_"))) {
      continue;
    }
    vars[name] = v;
  }
  return vars;
}

namespace {
// The fixed parts of run_variable_warnings()'s texts, which environment_warning_runs() recognises.
constexpr std::string_view kLaunchBlockingWarning =
    ": every launch waits for the GPU to finish it (CUDA's debugging switch), so the launch phase "
    "and eager step times are not those of a default run";
constexpr std::string_view kSwitchPicksWarning =
    ": a measurement switch picks a kernel form or a step's data path; compare results only "
    "with runs of the same setting";
constexpr std::string_view kSwitchIgnoredWarning =
    ": read only by the cuda backend; a cpu run ignores it and does not check its value";
constexpr std::string_view kMpsShareWarning =
    ": this MPS client may use only that share of the GPU's SMs";
}  // namespace

std::string_view environment_warning_runs(std::string_view warning) {
  // A variable's name (no space in it), then the fixed text: a value or label that happens to hold
  // such a text elsewhere does not make another warning one of these.
  const size_t space = warning.find(' ');
  if (space != std::string_view::npos &&
      warning.substr(space).starts_with(kUnknownVariableWarning) &&
      warning.ends_with(kUnknownVariableEnd)) {
    return "all runs";
  }
  const size_t eq = warning.find('=');
  if (eq == std::string_view::npos || eq == 0 || warning.substr(0, eq).find(' ') != warning.npos) {
    return {};
  }
  if (warning.ends_with(kSwitchIgnoredWarning)) return "all cpu runs";
  if (warning.ends_with(kSwitchPicksWarning) || warning.ends_with(kLaunchBlockingWarning) ||
      warning.ends_with(kMpsShareWarning)) {
    return "all cuda runs";
  }
  return {};
}

std::vector<std::string> run_variable_warnings(const nlohmann::json& variables, bool cuda) {
  std::vector<std::string> out;
  if (!variables.is_object()) return out;
  const auto value = [&](const char* name) -> std::string {
    const auto it = variables.find(name);
    return it != variables.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string blocking = value("CUDA_LAUNCH_BLOCKING");
  if (cuda && !blocking.empty() && blocking != "0") {
    out.push_back("CUDA_LAUNCH_BLOCKING=" + blocking + std::string(kLaunchBlockingWarning));
  }
  // decodebench's own switches (DECODEBENCH_GEMV_RING) pick kernel forms for measurements; only
  // the CUDA backend reads (and checks) them, so a CPU run says it ignores one that is recorded.
  for (const auto& [name, v] : variables.items()) {
    if (name.rfind("DECODEBENCH_", 0) != 0) continue;
    out.push_back(name + "=" + value(name.c_str()) +
                  std::string(cuda ? kSwitchPicksWarning : kSwitchIgnoredWarning));
  }
  const std::string share = value("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  if (cuda && !share.empty()) {
    out.push_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + share + std::string(kMpsShareWarning));
  }
  return out;
}

nlohmann::json host_environment() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  utsname u{};
  uname(&u);
  return {
      {"host", host},
      {"cpu", cpu_model_name()},
      {"cores", static_cast<int>(std::thread::hardware_concurrency())},
      {"memory_bytes", total_host_memory_bytes()},
      {"memory_available_bytes", available_host_memory_bytes()},
      {"os", os_name()},
      {"kernel", std::string(u.sysname) + " " + u.release + " " + u.machine},
      {"timestamp", utc_timestamp()},
      {"variables", run_variables()},
  };
}

}  // namespace decodebench
