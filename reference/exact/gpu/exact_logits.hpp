// The exact reference computed on the GPU: the same values as mqa::exact::compute (correctly
// rounded logits, magnitudes), fast enough to judge a full-size case. The GPU certifies what it
// can (exact_kernel.hip); the CPU reference settles the rest and re-computes sampled elements
// on every call as a cross-check.
#pragma once

#include <cstdint>
#include <string>

#include "reference/exact/logits.hpp"

namespace mqa::gpu {

struct exact_gpu_options {
  exact::options reference;             // relu rule, rows, CPU threads: as for exact::compute
  std::size_t check_rows = 8;           // rows sampled for the cross-check (first and last included)
  std::size_t check_keys_per_row = 64;  // in-window keys per sampled row (window edges included)
  std::uint64_t check_seed = 0x6d71612d677075ull;
  // The integer tensor-core dots (NVIDIA, compute capability >= 8.0, formats below 2^21 units,
  // head_dim <= 512) where they apply, the float64 engine elsewhere: both exact, bit for bit the
  // CPU. On the H200 the integer one is faster at the production shape (with wgmma about a fifth of
  // the float64 engine's kernel time; docs/measurements.md); false forces the float64 engine.
  bool integer_dots = true;
  // On an H100/H200 (sm_90) in a CUDA build, for head_dim <= 128, the integer engine's products
  // come from wgmma (exact_wgmma.cu) rather than mma.sync: the same exact dots, the
  // same kind of head-sum bound (12 roundings a product at 64 heads in both); false keeps mma.sync.
  bool warpgroup_dots = true;
};

struct exact_gpu_report {
  bool on_device = false;   // false: the whole problem went to the CPU reference, for `why_cpu`
  std::string why_cpu;
  double device_seconds = 0;       // upload, kernels, download (wall), host allocation overlapped
  double kernel_seconds = 0;       // the device kernels alone (events)
  std::string dot_engine;          // "float64", or the integer tensor cores (exact_kernel.hip)
  double allocation_seconds = 0;   // the result's host memory (overlaps the kernels)
  double fallback_seconds = 0;     // CPU reference on what the device left open
  double cross_check_seconds = 0;  // CPU reference on the sampled elements
  std::int64_t open_elements = 0;  // ordinary-row elements the device left open
  std::int64_t special_rows = 0;   // rows with a non-finite q code or weight (computed on the CPU)
  std::int64_t cross_checked = 0;  // elements compared with the CPU reference, bit for bit
};

// Whether exact_gpu_options::integer_dots / warpgroup_dots can take effect here (exact_device.hpp).
bool integer_dots_available();
bool warpgroup_dots_available();

// Whether exact_logits computes this modelled centre (o.dot_model set) on the device: the problem
// and the instruction suit each other, and the device can stage head_dim's keys
// (centre_kernel.hip). A centre it does not is computed by the CPU's model.
bool modelled_centre_on_device(const exact::problem& p, const exact::options& o);

// Whether exact_logits computes `o`'s logits on the device: with o.dot_model, modelled_centre_on_device;
// without, the problem's codes suit the device and its dots are exact there (what does not goes to
// the CPU reference whole).
bool computes_on_device(const exact::problem& p, const exact::options& o);

// With o.reference.dot_model, the centre a modelled contract is judged around: every dot the
// instruction model's (reference/exact/gpu/model_step.hpp, a second implementation held to
// reference/mma's bit for bit), the rest as the exact reference; where modelled_centre_on_device
// says no, the CPU's model computes all of it.
// Throws what exact::compute throws for bad input, std::runtime_error when the GPU fails, and
// std::logic_error when the cross-check finds a GPU value that differs from the CPU reference's
// (the message names the element and both values). Safe to call from several threads: the calls
// take turns.
exact::result exact_logits(const exact::problem& p, const exact_gpu_options& o = {},
                           exact_gpu_report* report = nullptr);

}  // namespace mqa::gpu
