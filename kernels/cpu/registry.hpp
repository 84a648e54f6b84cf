// The CPU variants: arithmetic models that must pass under their own contracts, and mutants
// that must be caught with the finding class their planted bug produces.
#pragma once

#include <vector>

#include "kernels/variant.hpp"

namespace mqa::kernels::cpu {

std::vector<variant> cpu_variants();

}  // namespace mqa::kernels::cpu
