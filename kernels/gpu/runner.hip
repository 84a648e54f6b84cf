// runner.hpp's launch sequence: upload, poison and canary fill, timed launch, guard check,
// download. Device memory stays allocated between launches (the determinism check launches
// every variant twice on the same problem).
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/gpu/runner.hpp"
#include "reference/gpu/device_buffer.hpp"
#include "reference/gpu/device_common.hpp"
#include "reference/gpu/launch_check.hpp"

namespace mqa::gpu {
namespace {

__global__ void fill_words(std::uint32_t* words, std::int64_t count, std::uint32_t value) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    words[i] = value;
}

// Counts canary words that changed in [0, count) and the smallest such index (first_changed
// starts at count: none).
__global__ void check_canary(const std::uint32_t* words, std::int64_t count, unsigned long long* changed,
                             unsigned long long* first_changed) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    if (words[i] != kCanaryBits) {
      atomicAdd(changed, 1ull);
      atomicMin(first_changed, static_cast<unsigned long long>(i));
    }
}

void fill(std::uint32_t* words, std::int64_t count, std::uint32_t value) {
  if (count <= 0) return;
  fill_words<<<1024, 256>>>(words, count, value);
  check_launch("fill_words");
}

struct runner_state {
  std::mutex lock;  // one launch at a time: the buffers below are shared
  device_inputs inputs;
  device_paged_inputs paged_inputs;
  device_buffer output;  // guard, [m, stride], guard
  device_buffer tally;   // 4 counters for the two bands
  hipEvent_t start = nullptr, stop = nullptr;
};

runner_state& state() {
  static runner_state s;
  return s;
}

struct band_tally {
  std::int64_t changed = 0, first = -1;  // first: index within the band, -1 when none
};

band_tally check_band(runner_state& s, const std::uint32_t* band, std::int64_t count) {
  auto* counters = s.tally.as<unsigned long long>();
  const unsigned long long init[2] = {0, static_cast<unsigned long long>(count)};
  check(hipMemcpy(counters, init, sizeof init, hipMemcpyHostToDevice), "guard counters");
  check_canary<<<256, 256>>>(band, count, counters, counters + 1);
  check_launch("check_canary");
  unsigned long long result[2] = {0, 0};
  check(hipMemcpy(result, counters, sizeof result, hipMemcpyDeviceToHost), "guard check");
  return {static_cast<std::int64_t>(result[0]),
          result[0] == 0 ? -1 : static_cast<std::int64_t>(result[1])};
}

void dispatch(kernel_id kernel, planted_bug bug, const logits_args& a) {
  switch (kernel) {
    case kernel_id::naive: launch_naive(a, bug); return;
    case kernel_id::tiled: launch_tiled(a, bug); return;
    case kernel_id::mfma_gfx942: launch_mfma_gfx942(a, bug); return;
    case kernel_id::wgmma_sm90: launch_wgmma_sm90(a, bug); return;
    case kernel_id::paged_naive:
    case kernel_id::paged_tiled: break;
  }
  throw std::invalid_argument("GPU runner: not a kernel of the prefill operation");
}

void dispatch_paged(kernel_id kernel, planted_bug bug, const paged_args& a) {
  switch (kernel) {
    case kernel_id::paged_naive: launch_paged_naive(a, bug); return;
    case kernel_id::paged_tiled: launch_paged_tiled(a, bug); return;
    default: break;
  }
  throw std::invalid_argument("GPU runner: not a kernel of the paged operation");
}

// The launch sequence around one kernel: guard bands and poison around [m, stride] floats, the
// kernel timed by events (`enqueue` gets the output's device pointer), the bands checked, the
// output downloaded into out.data. The caller holds s.lock and has uploaded the inputs.
template <class Enqueue>
launch_result guarded_launch(runner_state& s, const host_output& out, Enqueue enqueue) {
  if (s.start == nullptr) {
    check(hipEventCreate(&s.start), "event");
    check(hipEventCreate(&s.stop), "event");
  }
  const std::int64_t cells = out.m * out.stride;
  s.output.reserve(static_cast<std::size_t>(cells + 2 * kGuardFloats) * sizeof(float), "output and guard bands");
  s.tally.reserve(2 * sizeof(unsigned long long), "guard counters");
  auto* words = s.output.as<std::uint32_t>();
  fill(words, kGuardFloats, kCanaryBits);
  fill(words + kGuardFloats, cells, kPoisonBits);
  fill(words + kGuardFloats + cells, kGuardFloats, kCanaryBits);
  float* output = s.output.as<float>() + kGuardFloats;
  check(hipDeviceSynchronize(), "poison fill");

  check(hipEventRecord(s.start), "event record");
  enqueue(output);
  check(hipEventRecord(s.stop), "event record");
  check(hipEventSynchronize(s.stop), "kernel");
  check(hipGetLastError(), "kernel");
  float ms = 0;
  check(hipEventElapsedTime(&ms, s.start, s.stop), "event time");

  launch_result r;
  r.kernel_seconds = ms / 1e3;
  const band_tally before = check_band(s, words, kGuardFloats);
  const band_tally after = check_band(s, words + kGuardFloats + cells, kGuardFloats);
  r.guard_band_violations = before.changed + after.changed;
  if (before.changed > 0)
    r.first_violation_offset = before.first - kGuardFloats;
  else if (after.changed > 0)
    r.first_violation_offset = cells + after.first;
  check(hipMemcpy(out.data, output, static_cast<std::size_t>(cells) * sizeof(float), hipMemcpyDeviceToHost),
        "download output");
  return r;
}

}  // namespace

bool kernel_built(kernel_id id) {
  switch (id) {
    case kernel_id::naive:
    case kernel_id::tiled: return true;
    case kernel_id::mfma_gfx942: return mfma_built();
    case kernel_id::wgmma_sm90: return wgmma_built();
    case kernel_id::paged_naive:
    case kernel_id::paged_tiled: return true;
  }
  return false;
}

launch_result run_kernel(kernel_id kernel, planted_bug bug, const host_problem& p, const host_output& out) {
  if (out.m != p.m || out.n != p.n || out.stride < p.n)
    throw std::invalid_argument("GPU runner: the output view does not match the problem (m, n, stride >= n)");
  if (!kernel_built(kernel)) throw std::invalid_argument("GPU runner: this build does not carry that kernel");
  runner_state& s = state();
  const std::lock_guard guard(s.lock);
  logits_args a = s.inputs.upload(p);
  a.stride = out.stride;
  return guarded_launch(s, out, [&](float* output) {
    a.out = output;
    dispatch(kernel, bug, a);
  });
}

launch_result run_paged_kernel(kernel_id kernel, planted_bug bug, const host_paged_problem& p, const host_output& out) {
  if (out.m != p.rows() || out.n != p.max_context || out.stride < p.max_context)
    throw std::invalid_argument("GPU runner: the output view does not match the paged problem (batch * next_n rows, "
                                "max_context columns, stride >= max_context)");
  runner_state& s = state();
  const std::lock_guard guard(s.lock);
  paged_args a = s.paged_inputs.upload(p);
  a.stride = out.stride;
  return guarded_launch(s, out, [&](float* output) {
    a.out = output;
    dispatch_paged(kernel, bug, a);
  });
}

device_info probe_device() {
  int count = 0;
  if (hipGetDeviceCount(&count) != hipSuccess || count == 0) {
    (void)hipGetLastError();  // clear the sticky "no device" error for later calls
    return {false, std::string("no " MQA_GPU_RUNTIME_NAME " device")};
  }
  int device = 0;
  hipDeviceProp_t prop{};
  if (hipGetDevice(&device) != hipSuccess || hipGetDeviceProperties(&prop, device) != hipSuccess)
    return {false, std::string(MQA_GPU_RUNTIME_NAME " device properties unavailable")};
  return {true, std::string(prop.name) + " (" MQA_GPU_RUNTIME_NAME ", " + std::to_string(prop.multiProcessorCount) +
                    " multiprocessors, " + std::to_string(prop.totalGlobalMem >> 30) + " GiB)"};
}

}  // namespace mqa::gpu
