// HIP builds carry no Hopper wgmma kernel (kernels/cuda is NVIDIA sm_90a code): neither the fp8
// MQA kernel nor the exact reference's Hopper form.
#include <stdexcept>

#include "kernels/hip/exact_args.hpp"
#include "kernels/hip/launchers.hpp"

namespace mqa::gpu {

bool wgmma_built() { return false; }
std::optional<std::string> wgmma_unsupported(const logits_args&) { return "the wgmma kernel exists in CUDA builds only"; }
void launch_wgmma_sm90(const logits_args&, planted_bug) {
  throw std::invalid_argument("the wgmma kernel exists in CUDA builds only");
}

const char* exact_wgmma_unsupported(std::int64_t) { return "wgmma exists in CUDA builds only"; }
void launch_exact_tiles_wgmma(const exact_args&, const int8_operands&) {
  throw std::invalid_argument("wgmma exists in CUDA builds only");
}

}  // namespace mqa::gpu
