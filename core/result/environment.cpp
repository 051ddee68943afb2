#include "core/result/environment.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.hpp"

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
int64_t meminfo_kb(const std::string& key) {
  std::ifstream in("/proc/meminfo");
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
  };
}

}  // namespace decodebench
