// Runtime-call checking for the .hip translation units: every failure becomes an exception that
// names the call, so a host caller sees "hipMalloc(output): out of memory" rather than a crash.
#pragma once

#include <stdexcept>
#include <string>

#include "reference/gpu/hip_compat.hpp"

namespace mqa::gpu {

inline void check(hipError_t status, const char* what) {
  if (status != hipSuccess)
    throw std::runtime_error(std::string(MQA_GPU_RUNTIME_NAME " ") + what + ": " + hipGetErrorString(status));
}

// After a <<<...>>> launch: a refused launch (bad configuration, no device code for this GPU).
inline void check_launch(const char* kernel) { check(hipGetLastError(), kernel); }

}  // namespace mqa::gpu
