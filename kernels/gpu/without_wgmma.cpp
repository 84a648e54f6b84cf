// HIP builds carry no Hopper wgmma kernel (mqa_wgmma.cu is NVIDIA sm_90a code): the fp8 MQA
// kernel is not built there. reference/exact/gpu/without_wgmma.cpp says the same of the exact
// reference's Hopper form.
#include <stdexcept>

#include "kernels/gpu/launchers.hpp"

namespace mqa::gpu {

bool wgmma_built() { return false; }
std::optional<std::string> wgmma_unsupported(const logits_args&) { return "the wgmma kernel exists in CUDA builds only"; }
void launch_wgmma_sm90(const logits_args&, planted_bug) {
  throw std::invalid_argument("the wgmma kernel exists in CUDA builds only");
}

}  // namespace mqa::gpu
