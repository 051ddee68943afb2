#include "cuda/nvml.hpp"

#include <dlfcn.h>

#include <string>
#include <vector>

namespace decodebench::cuda {

namespace {

// The few NVML entry points used here (signatures from the NVML API reference).
using nvmlReturn = int;
using nvmlDevice = void*;
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
};

template <typename F>
void bind(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

constexpr int kClockSm = 1;
constexpr int kClockMem = 2;

nlohmann::json unavailable() { return "unavailable"; }

}  // namespace

nlohmann::json nvml_snapshot(const char* pci_bus_id) {
  Nvml n;
  n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n.lib) return {{"available", false}, {"reason", "libnvidia-ml.so.1 not found"}};
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
  nlohmann::json j;
  nvmlDevice dev = nullptr;
  if (!n.init || !n.by_bus_id || n.init() != 0) {
    dlclose(n.lib);
    return {{"available", false}, {"reason", "nvmlInit failed"}};
  }
  if (n.by_bus_id(pci_bus_id, &dev) != 0) {
    n.shutdown();
    dlclose(n.lib);
    return {{"available", false}, {"reason", std::string("no NVML device at ") + pci_bus_id}};
  }
  j["available"] = true;
  unsigned v = 0;
  j["sm_clock_mhz"] =
      n.clock && n.clock(dev, kClockSm, &v) == 0 ? nlohmann::json(v) : unavailable();
  j["mem_clock_mhz"] =
      n.clock && n.clock(dev, kClockMem, &v) == 0 ? nlohmann::json(v) : unavailable();
  j["max_sm_clock_mhz"] =
      n.max_clock && n.max_clock(dev, kClockSm, &v) == 0 ? nlohmann::json(v) : unavailable();
  j["max_mem_clock_mhz"] =
      n.max_clock && n.max_clock(dev, kClockMem, &v) == 0 ? nlohmann::json(v) : unavailable();
  unsigned long long reasons = 0;
  if (n.throttle && n.throttle(dev, &reasons) == 0) {
    static const std::pair<unsigned long long, const char*> kNames[] = {
        {0x1, "gpu_idle"},    {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
        {0x8, "hw_slowdown"}, {0x10, "sync_boost"},         {0x20, "sw_thermal"},
        {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
    std::vector<std::string> names;
    for (const auto& [bit, name] : kNames) {
      if (reasons & bit) names.emplace_back(name);
    }
    j["throttle_reasons"] = names;
  } else {
    j["throttle_reasons"] = unavailable();
  }
  int mode = 0, pending = 0;
  j["persistence_mode"] = n.persistence && n.persistence(dev, &mode) == 0
                              ? nlohmann::json(mode != 0 ? "enabled" : "disabled")
                              : unavailable();
  j["ecc"] = n.ecc && n.ecc(dev, &mode, &pending) == 0
                 ? nlohmann::json(mode != 0 ? "enabled" : "disabled")
                 : unavailable();
  j["temperature_c"] =
      n.temperature && n.temperature(dev, 0, &v) == 0 ? nlohmann::json(v) : unavailable();
  j["power_limit_w"] =
      n.power_limit && n.power_limit(dev, &v) == 0 ? nlohmann::json(v / 1000.0) : unavailable();
  j["power_w"] = n.power && n.power(dev, &v) == 0 ? nlohmann::json(v / 1000.0) : unavailable();
  n.shutdown();
  dlclose(n.lib);
  return j;
}

}  // namespace decodebench::cuda
