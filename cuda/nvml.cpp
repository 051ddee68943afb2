#include "cuda/nvml.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace decodebench::cuda {

namespace {

// The few NVML entry points used here (signatures from the NVML API reference).
using nvmlReturn = int;
using nvmlDevice = void*;
struct ViolationTime {  // nvmlViolationTime_t
  unsigned long long reference_time_us;
  unsigned long long violation_time_ns;
};
// The process lists' records: pid (unsigned) first, then usedGpuMemory (unsigned long long) and
// the MIG instance ids; 24 bytes (nvmlProcessInfo_v2_t), but 32 from the _v3 list of drivers
// 535.43-535.86, which appended usedGpuCcProtectedMemory (535.98 dropped that _v3, 535.104 brought
// it back at 24 bytes).
constexpr size_t kProcessRecordBytes = 24;
constexpr size_t kProcessRecordMaxBytes = 32;
struct Nvml {
  void* lib = nullptr;
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*shutdown)() = nullptr;
  nvmlReturn (*by_bus_id)(const char*, nvmlDevice*) = nullptr;
  nvmlReturn (*clock)(nvmlDevice, int, unsigned*) = nullptr;
  nvmlReturn (*max_clock)(nvmlDevice, int, unsigned*) = nullptr;
  nvmlReturn (*throttle)(nvmlDevice, unsigned long long*) = nullptr;
  nvmlReturn (*persistence)(nvmlDevice, int*) = nullptr;
  nvmlReturn (*ecc)(nvmlDevice, int*, int*) = nullptr;
  nvmlReturn (*temperature)(nvmlDevice, int, unsigned*) = nullptr;
  nvmlReturn (*power_limit)(nvmlDevice, unsigned*) = nullptr;
  nvmlReturn (*power)(nvmlDevice, unsigned*) = nullptr;
  nvmlReturn (*energy)(nvmlDevice, unsigned long long*) = nullptr;
  nvmlReturn (*violation)(nvmlDevice, int, ViolationTime*) = nullptr;
  nvmlReturn (*compute_processes)(nvmlDevice, unsigned*, void*) = nullptr;
  size_t process_record_bytes = kProcessRecordBytes;  // the stride of compute_processes' records
  nvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  nvmlDevice dev = nullptr;
};

template <typename F>
void bind(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

constexpr int kClockSm = 1;
constexpr int kClockMem = 2;
constexpr int kPolicyPower = 0;    // NVML_PERF_POLICY_POWER
constexpr int kPolicyThermal = 1;  // NVML_PERF_POLICY_THERMAL

/// The record size of the _v3 process list of the loaded driver: 32 bytes for drivers 535.43 to
/// 535.86, else 24 (kProcessRecordBytes); 0 when the driver's version cannot be read (the list is
/// then not used).
size_t v3_record_bytes(const Nvml& n) {
  char version[96] = {};
  if (!n.driver_version || n.driver_version(version, sizeof version) != 0) return 0;
  unsigned major = 0, minor = 0;
  if (std::sscanf(version, "%u.%u", &major, &minor) != 2) return 0;
  return major == 535 && minor >= 43 && minor <= 86 ? kProcessRecordMaxBytes : kProcessRecordBytes;
}

/// Loads NVML and opens the device at `pci_bus_id`; "" on success, else why not (nothing is left
/// loaded then).
std::string open_nvml(Nvml& n, const char* pci_bus_id) {
  n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n.lib) return "libnvidia-ml.so.1 not found";
  bind(n.lib, n.init, "nvmlInit_v2");
  bind(n.lib, n.shutdown, "nvmlShutdown");
  bind(n.lib, n.by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(n.lib, n.clock, "nvmlDeviceGetClockInfo");
  bind(n.lib, n.max_clock, "nvmlDeviceGetMaxClockInfo");
  bind(n.lib, n.throttle, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!n.throttle) bind(n.lib, n.throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(n.lib, n.persistence, "nvmlDeviceGetPersistenceMode");
  bind(n.lib, n.ecc, "nvmlDeviceGetEccMode");
  bind(n.lib, n.temperature, "nvmlDeviceGetTemperature");
  bind(n.lib, n.power_limit, "nvmlDeviceGetPowerManagementLimit");
  bind(n.lib, n.power, "nvmlDeviceGetPowerUsage");
  bind(n.lib, n.energy, "nvmlDeviceGetTotalEnergyConsumption");
  bind(n.lib, n.violation, "nvmlDeviceGetViolationStatus");
  bind(n.lib, n.driver_version, "nvmlSystemGetDriverVersion");
  // _v2's record is 24 bytes on every driver; _v3's too except on 535.43-535.86 (see above).
  bind(n.lib, n.compute_processes, "nvmlDeviceGetComputeRunningProcesses_v2");
  const bool v3 = !n.compute_processes;
  if (v3) bind(n.lib, n.compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!n.init || !n.shutdown || !n.by_bus_id || n.init() != 0) {
    dlclose(n.lib);
    n.lib = nullptr;
    return "nvmlInit failed";
  }
  if (v3 && n.compute_processes) n.process_record_bytes = v3_record_bytes(n);  // after init
  if (n.by_bus_id(pci_bus_id, &n.dev) != 0) {
    n.shutdown();
    dlclose(n.lib);
    n.lib = nullptr;
    return std::string("no NVML device at ") + pci_bus_id;
  }
  return "";
}

void close_nvml(Nvml& n) {
  if (!n.lib) return;
  n.shutdown();
  dlclose(n.lib);
  n.lib = nullptr;
}

/// The clock event reasons set in `reasons` (nvmlClocksEventReasons bits), by name.
std::vector<std::string> reason_names(unsigned long long reasons) {
  static const std::pair<unsigned long long, const char*> kNames[] = {
      {0x1, "gpu_idle"},    {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"}, {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::vector<std::string> names;
  for (const auto& [bit, name] : kNames) {
    if (reasons & bit) names.emplace_back(name);
  }
  return names;
}

constexpr nvmlReturn kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE

/// The PIDs of the compute processes with a context on the device (as the host numbers them), or
/// false when NVML cannot list them or their record size is unknown.
bool compute_pids(const Nvml& n, std::vector<uint32_t>* pids) {
  if (!n.compute_processes || n.process_record_bytes == 0) return false;
  // Room for records of the largest size whatever the stride, so that a driver writing larger
  // records than expected cannot write past the buffer.
  unsigned capacity = 32;
  std::vector<unsigned char> records;
  for (int attempt = 0; attempt < 4; ++attempt) {  // processes may start between the calls
    records.assign(size_t{capacity} * kProcessRecordMaxBytes, 0);
    unsigned count = capacity;
    const nvmlReturn rc = n.compute_processes(n.dev, &count, records.data());
    if (rc == kInsufficientSize) {
      capacity = count + 16;
      continue;
    }
    if (rc != 0) return false;
    pids->clear();
    for (unsigned i = 0; i < count && i < capacity; ++i) {
      uint32_t pid = 0;
      std::memcpy(&pid, records.data() + i * n.process_record_bytes, sizeof pid);
      pids->push_back(pid);
    }
    return true;
  }
  return false;
}

/// Whether this process lives in the host's PID namespace, where NVML's PIDs are its own: the
/// initial namespace's inode is 0xEFFFFFFC (PROC_PID_INIT_INO, Linux include/linux/proc_ns.h).
bool in_host_pid_namespace() {
  char link[64] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);
  return n > 0 && std::strcmp(link, "pid:[4026531836]") == 0;
}

nlohmann::json unavailable() { return "unavailable"; }

/// Readings through an open Nvml, closed on destruction.
class NvmlTelemetry final : public GpuTelemetry {
 public:
  explicit NvmlTelemetry(const Nvml& n) : n_(n), host_pids_(in_host_pid_namespace()) {}
  ~NvmlTelemetry() override { close_nvml(n_); }
  NvmlTelemetry(const NvmlTelemetry&) = delete;
  NvmlTelemetry& operator=(const NvmlTelemetry&) = delete;

  GpuReading read() override {
    GpuReading r;
    unsigned v = 0;
    if (n_.clock && n_.clock(n_.dev, kClockSm, &v) == 0) r.sm_clock_mhz = v;
    if (n_.clock && n_.clock(n_.dev, kClockMem, &v) == 0) r.mem_clock_mhz = v;
    if (n_.temperature && n_.temperature(n_.dev, 0, &v) == 0) r.temperature_c = v;
    unsigned long long e = 0;
    if (n_.energy && n_.energy(n_.dev, &e) == 0) r.energy_mj = static_cast<int64_t>(e);
    ViolationTime t{};
    if (n_.violation && n_.violation(n_.dev, kPolicyPower, &t) == 0) {
      r.power_violation_ns = static_cast<int64_t>(t.violation_time_ns);
    }
    if (n_.violation && n_.violation(n_.dev, kPolicyThermal, &t) == 0) {
      r.thermal_violation_ns = static_cast<int64_t>(t.violation_time_ns);
    }
    unsigned long long reasons = 0;
    if (n_.throttle && n_.throttle(n_.dev, &reasons) == 0) {
      r.throttle_reasons = reason_names(reasons);
      r.reasons_known = true;
    }
    std::vector<uint32_t> pids;
    if (compute_pids(n_, &pids)) {
      r.other_processes = other_processes(pids, static_cast<uint32_t>(getpid()), host_pids_);
    }
    return r;
  }

 private:
  Nvml n_;
  bool host_pids_;  // NVML's PIDs are in this process's PID namespace (in_host_pid_namespace)
};

}  // namespace

nlohmann::json nvml_snapshot(const char* pci_bus_id) {
  Nvml n;
  const std::string why = open_nvml(n, pci_bus_id);
  if (!why.empty()) return {{"available", false}, {"reason", why}};
  nlohmann::json j;
  j["available"] = true;
  unsigned v = 0;
  j["sm_clock_mhz"] =
      n.clock && n.clock(n.dev, kClockSm, &v) == 0 ? nlohmann::json(v) : unavailable();
  j["mem_clock_mhz"] =
      n.clock && n.clock(n.dev, kClockMem, &v) == 0 ? nlohmann::json(v) : unavailable();
  j["max_sm_clock_mhz"] =
      n.max_clock && n.max_clock(n.dev, kClockSm, &v) == 0 ? nlohmann::json(v) : unavailable();
  j["max_mem_clock_mhz"] =
      n.max_clock && n.max_clock(n.dev, kClockMem, &v) == 0 ? nlohmann::json(v) : unavailable();
  unsigned long long reasons = 0;
  j["throttle_reasons"] = n.throttle && n.throttle(n.dev, &reasons) == 0
                              ? nlohmann::json(reason_names(reasons))
                              : unavailable();
  int mode = 0, pending = 0;
  j["persistence_mode"] = n.persistence && n.persistence(n.dev, &mode) == 0
                              ? nlohmann::json(mode != 0 ? "enabled" : "disabled")
                              : unavailable();
  j["ecc"] = n.ecc && n.ecc(n.dev, &mode, &pending) == 0
                 ? nlohmann::json(mode != 0 ? "enabled" : "disabled")
                 : unavailable();
  j["temperature_c"] =
      n.temperature && n.temperature(n.dev, 0, &v) == 0 ? nlohmann::json(v) : unavailable();
  j["power_limit_w"] =
      n.power_limit && n.power_limit(n.dev, &v) == 0 ? nlohmann::json(v / 1000.0) : unavailable();
  j["power_w"] = n.power && n.power(n.dev, &v) == 0 ? nlohmann::json(v / 1000.0) : unavailable();
  std::vector<uint32_t> pids;
  j["compute_process_pids"] = compute_pids(n, &pids) ? nlohmann::json(pids) : unavailable();
  j["pid"] = getpid();
  j["host_pid_namespace"] = in_host_pid_namespace();
  close_nvml(n);
  return j;
}

std::unique_ptr<GpuTelemetry> nvml_telemetry(const char* pci_bus_id, std::string* why) {
  Nvml n;
  std::string reason = open_nvml(n, pci_bus_id);
  if (!reason.empty()) {
    if (why) *why = reason;
    return nullptr;
  }
  return std::make_unique<NvmlTelemetry>(n);
}

}  // namespace decodebench::cuda
