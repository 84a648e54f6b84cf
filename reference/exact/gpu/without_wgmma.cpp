// HIP builds carry no Hopper wgmma kernel (exact_wgmma.cu is NVIDIA sm_90a code): the exact
// reference's integer engine has no Hopper form there. kernels/gpu/without_wgmma.cpp says the
// same of the fp8 MQA kernel under test.
#include <stdexcept>

#include "reference/exact/gpu/exact_args.hpp"

namespace mqa::gpu {

const char* exact_wgmma_unsupported(std::int64_t) { return "wgmma exists in CUDA builds only"; }
void launch_exact_tiles_wgmma(const exact_args&, const int8_operands&) {
  throw std::invalid_argument("wgmma exists in CUDA builds only");
}

}  // namespace mqa::gpu
