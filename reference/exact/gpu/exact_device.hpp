// The GPU half of the exact reference (exact_kernel.hip): correctly rounded logits for every
// element it can certify, and the list of those it cannot, which the host half (exact_logits.cpp)
// settles with the CPU reference. Plain C++ on both sides.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "reference/exact/gpu/model_step.hpp"
#include "reference/gpu/host_problem.hpp"

namespace mqa::gpu {

struct exact_device_output {
  // [row_count, n], host memory the caller provides (by the time `while_running` returns): the
  // certified value where decided, -inf outside the window; an upper bound of A
  // (reference/exact/magnitude.hpp), 0 outside.
  float* logits = nullptr;
  double* magnitude = nullptr;
  // In-window elements of ordinary rows that the device left open, as (row position, key): a key
  // with a NaN/Inf code or a non-finite k_scale, or a value whose enclosure touches a float32
  // rounding boundary.
  std::vector<std::pair<std::int64_t, std::int64_t>> undecided;
  // [row_count]: the row has a NaN/Inf q code or a non-finite weight; none of its in-window
  // elements was computed.
  std::vector<std::uint8_t> special_row;
  double kernel_seconds = 0;  // device-event time of the preparation and main kernels
  const char* dot_engine = "";  // which engine made the dots: "float64" or the integer tensor cores
};

// Whether float64 holds every dot product of these formats exactly: max_units(q) * max_units(k)
// * head_dim <= 2^53 (docs/design.md). Otherwise the caller must use the CPU reference.
bool dots_exact_in_float64(const code_format& q, const code_format& k, std::int64_t head_dim);

// Computes rows rows[0 .. row_count) of p and fills `out`. `while_running` is called once the
// kernels are queued and before the results are waited for: the caller allocates the host
// buffers there (gigabytes for a full-size case, whose first touch costs as much as the kernels)
// and sets out.logits and out.magnitude to row_count * n elements each.
// Whether this build and device can make dots on the integer tensor cores: NVIDIA, compute
// capability >= 8.0 for both the device and the compiled kernel; never on HIP builds.
bool integer_dots_available();

// Whether the integer engine's Hopper form (wgmma, exact_wgmma.cu) can run here: a
// CUDA build and an sm_90 device (H100, H200). It takes problems with head_dim <= 128.
bool warpgroup_dots_available();

// `integer_dots`: the integer tensor cores make the dots where they can (exact_kernel.hip); false
// keeps the float64 engine. `warpgroup_dots`: their Hopper form where it applies; false keeps
// mma.sync. Tests compare all three. With `model`, every dot is that instruction model's instead
// (a modelled centre, centre_kernel.hip; the caller has checked centre_unsupported), and the
// magnitudes are the model's.
void exact_on_device(const host_problem& p, const std::int64_t* rows, std::int64_t row_count, exact_device_output& out,
                     const std::function<void()>& while_running, bool integer_dots = true, bool warpgroup_dots = true,
                     const model::chain_rule* model = nullptr);

// Why this device cannot compute a modelled centre of head_dim, or nullptr (centre_kernel.hip).
const char* centre_unsupported(std::int64_t head_dim);

}  // namespace mqa::gpu
