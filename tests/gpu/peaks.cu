// The H200's own ceilings for the exact reference's integer engine (its roofline, measured
// rather than read off a data sheet): how many int8 multiply-adds a second mma.sync m16n8k32 s8
// sustains (the instruction exact_kernel.hip uses; wgmma is not used there), how many float64 FMAs
// the vector units sustain (the Dot2 head sums run there), and how many int32 -> float64
// conversions (the slices' shift classes are joined in float64); and the host link: 4 GiB copied
// from and to pageable host memory by the runtime's own copy and by the pinned staging of
// reference/gpu/staged_copy.hpp, in the same run. Each loop keeps several
// independent chains per thread so that the pipe, not a dependency, is what is measured; the
// results are written out so nothing is optimised away. NVIDIA only (inline PTX).
//
//   mqa_gpu_peaks      # prints one line per ceiling
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reference/gpu/staged_copy.hpp"

namespace {

constexpr int kChains = 8;
constexpr int kIterations = 4096;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "mqa_gpu_peaks: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__global__ void mma_s8_loop(std::int32_t* out, std::uint32_t seed) {
  std::uint32_t a[4], b[2];
  for (int x = 0; x < 4; ++x) a[x] = seed * (threadIdx.x + 7 * x + 1);
  for (int x = 0; x < 2; ++x) b[x] = seed ^ (threadIdx.x * 13 + x);
  std::int32_t d[kChains][4] = {};
  for (int it = 0; it < kIterations; ++it)
    for (int c = 0; c < kChains; ++c)
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
          : "+r"(d[c][0]), "+r"(d[c][1]), "+r"(d[c][2]), "+r"(d[c][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  std::int32_t sum = 0;
  for (int c = 0; c < kChains; ++c) sum += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void dfma_loop(double* out, double seed) {
  double x[kChains];
  for (int c = 0; c < kChains; ++c) x[c] = seed + threadIdx.x + c;
  const double m = 1.0000001, a = 1e-9;
  for (int it = 0; it < kIterations; ++it)
    for (int c = 0; c < kChains; ++c) x[c] = fma(x[c], m, a);
  double sum = 0;
  for (int c = 0; c < kChains; ++c) sum += x[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void cvt_loop(double* out, int seed) {
  int v[kChains];
  double acc[kChains] = {};
  for (int c = 0; c < kChains; ++c) v[c] = seed + threadIdx.x * 3 + c;
  for (int it = 0; it < kIterations; ++it)
    for (int c = 0; c < kChains; ++c) {
      acc[c] += static_cast<double>(v[c]);  // one conversion and one add: the conversion is the slower pipe
      v[c] ^= it;
    }
  double sum = 0;
  for (int c = 0; c < kChains; ++c) sum += acc[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

template <class Launch>
float milliseconds(Launch launch) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  launch();  // warm-up
  check(cudaEventRecord(start), "event");
  launch();
  check(cudaEventRecord(stop), "event");
  check(cudaEventSynchronize(stop), "kernel");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "event time");
  return ms;
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device");
  const int blocks = prop.multiProcessorCount * 8, threads = 256;
  const double per_thread = static_cast<double>(kIterations) * kChains;
  const double thread_count = static_cast<double>(blocks) * threads;
  void* out = nullptr;
  check(cudaMalloc(&out, static_cast<std::size_t>(blocks) * threads * sizeof(double)), "malloc");

  const float mma_ms = milliseconds([&] { mma_s8_loop<<<blocks, threads>>>(static_cast<std::int32_t*>(out), 0x9E3779B9u); });
  // One mma.sync m16n8k32 is 16 * 8 * 32 multiply-adds for the warp.
  const double macs = thread_count / 32 * per_thread * 16 * 8 * 32;
  std::printf("mma.sync m16n8k32 s8: %.0f TOPS (%.3g int8 multiply-adds in %.3f ms) on %s, %d SMs\n",
              2 * macs / (mma_ms * 1e-3) / 1e12, macs, mma_ms, prop.name, prop.multiProcessorCount);

  const float fma_ms = milliseconds([&] { dfma_loop<<<blocks, threads>>>(static_cast<double*>(out), 1.5); });
  const double fmas = thread_count * per_thread;
  std::printf("float64 FMA: %.1f TFLOP/s (%.3g FMAs in %.3f ms)\n", 2 * fmas / (fma_ms * 1e-3) / 1e12, fmas, fma_ms);

  const float cvt_ms = milliseconds([&] { cvt_loop<<<blocks, threads>>>(static_cast<double*>(out), 3); });
  std::printf("int32 -> float64 conversion (with one float64 add each): %.2f T conversions/s (%.3g in %.3f ms)\n",
              thread_count * per_thread / (cvt_ms * 1e-3) / 1e12, thread_count * per_thread, cvt_ms);
  check(cudaFree(out), "free");

  // The link, from pageable memory (a std::vector, touched before): the second of two copies timed.
  const std::size_t bytes = std::size_t{4} << 30;
  std::vector<char> host(bytes, 1), back(bytes, 2);
  void* device = nullptr;
  check(cudaMalloc(&device, bytes), "malloc");
  auto seconds = [](auto copy) {
    copy();
    const auto start = std::chrono::steady_clock::now();
    copy();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double plain_up = seconds([&] { check(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice), "up"); });
  const double staged_up = seconds([&] { mqa::gpu::copy_to_device_staged(device, host.data(), bytes, "up"); });
  const double plain_down = seconds([&] { check(cudaMemcpy(back.data(), device, bytes, cudaMemcpyDeviceToHost), "down"); });
  const double staged_down = seconds([&] { mqa::gpu::copy_to_host_staged(back.data(), device, bytes, "down"); });
  const double gb = static_cast<double>(bytes) / 1e9;
  std::printf("host -> device, 4 GiB pageable: runtime's copy %.1f GB/s, staged %.1f GB/s (%.2fx)\n", gb / plain_up,
              gb / staged_up, plain_up / staged_up);
  std::printf("device -> host, 4 GiB pageable: runtime's copy %.1f GB/s, staged %.1f GB/s (%.2fx)\n", gb / plain_down,
              gb / staged_down, plain_down / staged_down);
  if (std::memcmp(back.data(), host.data(), bytes) != 0) {
    std::fprintf(stderr, "mqa_gpu_peaks: the staged round trip changed bytes\n");
    return 1;
  }
  check(cudaFree(device), "free");
  return 0;
}
