// The wgmma probe's device side: each block multiplies one 64 x D tile of A with one 64 x D tile of
// B (64 dot products per row) through reference/gpu/wgmma.cuh, starting every accumulator from C,
// so the host can compare each of the 4096 results per block with reference/mma's model.
#include <stdexcept>

#include "mma_probe_kernel.hpp"
#include "reference/gpu/launch_check.hpp"
#include "reference/gpu/wgmma.cuh"

namespace mqa::gpu_test {
namespace {

using gpu::sm90::fp8_type;
namespace sm90 = gpu::sm90;

template <fp8_type A, fp8_type B>
__global__ void __launch_bounds__(128, 1) probe_kernel(const std::uint8_t* a, const std::uint8_t* b, const float* c,
                                                       float* d, int steps) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  std::uint8_t* a_tiles = smem;
  std::uint8_t* b_tiles = smem + steps * sm90::kTileBytes;
  const int depth = steps * 32;
  const std::size_t block = blockIdx.x;
  const std::uint8_t* a_block = a + block * 64 * depth;
  const std::uint8_t* b_block = b + block * 64 * depth;
  for (int x = static_cast<int>(threadIdx.x); x < 64 * depth; x += 128) {
    const unsigned row = x / depth, k = x % depth;
    a_tiles[(k / 32) * sm90::kTileBytes + sm90::tile_offset(row, k % 32)] = a_block[x];
    b_tiles[(k / 32) * sm90::kTileBytes + sm90::tile_offset(row, k % 32)] = b_block[x];
  }
  sm90::fence_shared_for_wgmma();
  __syncthreads();
  float acc[32];
  for (int i = 0; i < 32; ++i) acc[i] = c[block * 4096 + sm90::fragment_row(i) * 64 + sm90::fragment_column(i)];
  sm90::fence();
  for (int s = 0; s < steps; ++s)
    sm90::mma_m64n64k32<A, B>(acc, sm90::descriptor(a_tiles + s * sm90::kTileBytes),
                              sm90::descriptor(b_tiles + s * sm90::kTileBytes));
  sm90::commit();
  sm90::wait_all();
  for (int i = 0; i < 32; ++i) d[block * 4096 + sm90::fragment_row(i) * 64 + sm90::fragment_column(i)] = acc[i];
}

template <fp8_type A, fp8_type B>
void launch(const std::uint8_t* a, const std::uint8_t* b, const float* c, float* d, int blocks, int steps) {
  const std::size_t shared = static_cast<std::size_t>(2 * steps) * sm90::kTileBytes;
  gpu::check(cudaFuncSetAttribute(probe_kernel<A, B>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)),
             "cudaFuncSetAttribute(probe_kernel)");
  probe_kernel<A, B><<<static_cast<unsigned>(blocks), 128, shared>>>(a, b, c, d, steps);
  gpu::check_launch("probe_kernel");
}

}  // namespace

void run_wgmma_probe(bool a_e5m2, bool b_e5m2, const std::uint8_t* a, const std::uint8_t* b, const float* c, float* d,
                     int blocks, int steps) {
  const std::size_t operand = static_cast<std::size_t>(blocks) * 64 * 32 * steps, values = static_cast<std::size_t>(blocks) * 4096;
  std::uint8_t *da = nullptr, *db = nullptr;
  float *dc = nullptr, *dd = nullptr;
  gpu::check(cudaMalloc(&da, operand), "cudaMalloc(a)");
  gpu::check(cudaMalloc(&db, operand), "cudaMalloc(b)");
  gpu::check(cudaMalloc(&dc, values * sizeof(float)), "cudaMalloc(c)");
  gpu::check(cudaMalloc(&dd, values * sizeof(float)), "cudaMalloc(d)");
  gpu::check(cudaMemcpy(da, a, operand, cudaMemcpyHostToDevice), "copy a");
  gpu::check(cudaMemcpy(db, b, operand, cudaMemcpyHostToDevice), "copy b");
  gpu::check(cudaMemcpy(dc, c, values * sizeof(float), cudaMemcpyHostToDevice), "copy c");
  if (!a_e5m2 && !b_e5m2) launch<fp8_type::e4m3, fp8_type::e4m3>(da, db, dc, dd, blocks, steps);
  else if (!a_e5m2) launch<fp8_type::e4m3, fp8_type::e5m2>(da, db, dc, dd, blocks, steps);
  else if (!b_e5m2) launch<fp8_type::e5m2, fp8_type::e4m3>(da, db, dc, dd, blocks, steps);
  else launch<fp8_type::e5m2, fp8_type::e5m2>(da, db, dc, dd, blocks, steps);
  gpu::check(cudaDeviceSynchronize(), "probe_kernel");
  gpu::check(cudaMemcpy(d, dd, values * sizeof(float), cudaMemcpyDeviceToHost), "copy d");
  cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
}

}  // namespace mqa::gpu_test
