// Every variant this build knows: the CPU models and mutants, and the GPU kernels when the GPU
// build is on (MQA_GPU).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/variant.hpp"

namespace mqa::kernels {

// The variants that can run here: the CPU ones, and the GPU ones when this is a GPU build on a
// machine with a usable device.
const std::vector<variant>& all_variants();
const variant* find_variant(std::string_view name);

// Names of the GPU variants (kernels/gpu), known to every build so that a suite naming them loads
// anywhere and says, when run without a GPU, what it needs.
bool is_gpu_variant_name(std::string_view name);
// Why a GPU variant cannot run here ("this build has no GPU kernels", "no usable device: ...").
std::string why_no_gpu();
// The GPU the GPU variants run on ("NVIDIA H200 (CUDA, 132 multiprocessors, 139 GiB)"), or
// nullopt when they cannot run here: certificates name the machine.
std::optional<std::string> gpu_in_use();

}  // namespace mqa::kernels
