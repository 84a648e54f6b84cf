// HIP builds carry no Hopper wgmma kernel (kernels/cuda is NVIDIA sm_90a code).
#include <stdexcept>

#include "kernels/hip/launchers.hpp"

namespace mqa::gpu {

bool wgmma_built() { return false; }
std::optional<std::string> wgmma_unsupported(const logits_args&) { return "the wgmma kernel exists in CUDA builds only"; }
void launch_wgmma_sm90(const logits_args&, planted_bug) {
  throw std::invalid_argument("the wgmma kernel exists in CUDA builds only");
}

}  // namespace mqa::gpu
