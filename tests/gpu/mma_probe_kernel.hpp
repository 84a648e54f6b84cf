// Host entry of the wgmma probe (mma_probe_kernel.cu, sm_90a): `blocks` independent 64 x 64 tiles,
// d[t][i][n] = C[t][i][n] + sum over steps * 32 of a[t][i][k] b[t][n][k], a and b row-major fp8
// codes ([blocks, 64, steps * 32]), c and d float32 [blocks, 64, 64]. Plain C++ interface.
#pragma once

#include <cstdint>

namespace mqa::gpu_test {

void run_wgmma_probe(bool a_e5m2, bool b_e5m2, const std::uint8_t* a, const std::uint8_t* b, const float* c, float* d,
                     int blocks, int steps);

}  // namespace mqa::gpu_test
