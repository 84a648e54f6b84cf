// Every variant this build knows: the CPU models and mutants, and the GPU kernels when the GPU
// build is on (MQA_GPU).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "kernels/variant.hpp"

namespace mqa::kernels {

const std::vector<variant>& all_variants();
const variant* find_variant(std::string_view name);

}  // namespace mqa::kernels
