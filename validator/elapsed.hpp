// Wall seconds since a moment of the steady clock: what the steps' timings (judge::seconds, a
// suite's case timings, the exchange with a kernel's process, the device comparator's) add up.
#pragma once

#include <chrono>

namespace mqa {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace mqa
