#include "machine.hpp"

#include <fmt/core.h>
#include <sys/utsname.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include "kernels/registry/registry.hpp"

namespace mqa::cli {

reports::machine this_machine() {
  reports::machine m;
  utsname u{};
  m.system = ::uname(&u) == 0 ? fmt::format("{} {} {}", u.sysname, u.release, u.machine) : "unknown";
  m.cpu = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    // x86 says "model name"; some Arm kernels say only "Hardware" or nothing usable.
    if (line.starts_with("model name") || line.starts_with("Hardware")) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) m.cpu = line.substr(colon + 2);
      break;
    }
  }
  m.cores = std::thread::hardware_concurrency();
  m.gpu = kernels::gpu_in_use();
  return m;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace mqa::cli
