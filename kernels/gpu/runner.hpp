// The GPU runner: one launch of one kernel on one problem, with the checks a host cannot make
// after the fact. Around the output it allocates guard bands filled with a canary and checks
// them after the launch (an out-of-bounds write); it fills the output with a poison NaN first
// (kPoisonBits: an element still holding it was never written); it times the kernel alone with
// device events. Plain C++ interface, implemented in runner.hip.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/gpu/launchers.hpp"
#include "reference/gpu/host_problem.hpp"

namespace mqa::gpu {

struct host_output {
  float* data = nullptr;  // [m, stride] host memory, overwritten entirely (padding included)
  std::int64_t m = 0, n = 0, stride = 0;
};

struct launch_result {
  double kernel_seconds = 0;
  std::int64_t guard_band_violations = 0;   // canary words overwritten, both bands together
  std::int64_t first_violation_offset = 0;  // floats from the output's start; negative: before it
};

// Guard band on each side of the output, in floats (4 MiB each).
inline constexpr std::int64_t kGuardFloats = std::int64_t{1} << 20;

// Throws std::runtime_error when no device is usable or the runtime fails, and
// std::invalid_argument for a kernel this build lacks or a bug the kernel does not carry.
launch_result run_kernel(kernel_id kernel, planted_bug bug, const host_problem& p, const host_output& out);

// The same for a paged kernel (kernel_id::paged_*) on a paged problem: out is [batch * next_n,
// stride] over max_context columns.
launch_result run_paged_kernel(kernel_id kernel, planted_bug bug, const host_paged_problem& p, const host_output& out);

struct device_info {
  bool usable = false;
  std::string description;  // "NVIDIA H200 (CUDA, 132 multiprocessors, 139 GiB)" or why unusable
};
device_info probe_device();

}  // namespace mqa::gpu
