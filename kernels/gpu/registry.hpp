// The GPU variants and mutants as the validator sees them (kernels/variant.hpp). Host C++; the
// kernels behind them are in the .hip files of this folder. Targets that link mqa_gpu get the
// compile definition MQA_HAVE_GPU=1, so that a caller can register these only in GPU builds.
#pragma once

#include <vector>

#include "kernels/variant.hpp"

namespace mqa::kernels {

// Correct variants first (hip-naive, hip-tiled, and hip-mfma-gfx942 in HIP builds), then the
// mutants, each with the finding its planted bug must produce. Listing needs no GPU; running one
// without a usable device throws std::runtime_error.
std::vector<variant> gpu_variants();

}  // namespace mqa::kernels
