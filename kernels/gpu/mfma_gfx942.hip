// A third kernel for AMD Instinct MI300 (gfx942): dot products on the fp8 matrix cores with
// __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8, as AITER's and vLLM's gfx942 kernels do. gfx942's
// fp8 is e4m3fnuz, so the kernel consumes e4m3fnuz q and k only (its contract says so) and
// head_dim a multiple of 32.
//
// Status: compiled for gfx942 by ci/amd-compile-check.sh; never run here (no AMD GPU in reach).
// The lane layout below follows AMD's matrix instruction calculator for this instruction and is
// unverified on hardware, as is the contract's fp32 dot: how the matrix core accumulates the 32
// products of one instruction is not measured here. In CUDA builds this file only reports that
// the kernel is absent.
#include <stdexcept>
#include <string>

#include "kernels/gpu/launchers.hpp"
#include "reference/gpu/device_common.hpp"
#include "reference/gpu/launch_check.hpp"

namespace mqa::gpu {

#if defined(__HIP__)
namespace {

constexpr int kThreads = 256;
constexpr int kWave = 64;                         // gfx9 wavefronts
constexpr int kWaves = kThreads / kWave;          // 4, each 16 heads of a 64-head pass
constexpr int kTileKeys = 16;                     // one MFMA's N
constexpr int kTilesPerBlock = 16;                // 256 keys per block
constexpr int kHeadsPerPass = kWaves * 16;

typedef float float4_t __attribute__((ext_vector_type(4)));

// Eight consecutive codes (8-byte aligned: head_dim % 32 == 0) as the MFMA operand.
__device__ inline long load_eight(const std::uint8_t* p) { return *reinterpret_cast<const long*>(p); }

__device__ inline float4_t mfma_16x16x32(long a, long b, float4_t c) {
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
  return __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a, b, c, 0, 0, 0);
#elif defined(__HIP_DEVICE_COMPILE__)
  __builtin_trap();  // built for a GPU without fp8 matrix cores: never launched (kernel_built)
  return c;
#else
  return c;
#endif
}

__global__ __launch_bounds__(kThreads) void mfma_logits(logits_args a) {
  // partial[slot][key]: slot = 4 * wave + lane / 16 holds 4 heads' weighted relu'd dots.
  __shared__ float partial[kWaves * 4][kTileKeys];
  __shared__ float weights[kHeadsPerPass];
  const int t = static_cast<int>(threadIdx.x);
  const int wave = t / kWave, lane = t % kWave;
  const int quarter = lane / 16, column = lane % 16;
  const std::int64_t tiles = (a.n + kTileKeys - 1) / kTileKeys;
  const std::int64_t first_tile = static_cast<std::int64_t>(blockIdx.x) * kTilesPerBlock;
  const std::int64_t last_tile = first_tile + kTilesPerBlock < tiles ? first_tile + kTilesPerBlock : tiles;

  for (std::int64_t row = blockIdx.y; row < a.m; row += gridDim.y) {
    const key_window w = clamped_window(a.ks[row], a.ke[row], a.n);
    for (std::int64_t tile_index = first_tile; tile_index < last_tile; ++tile_index) {
      const std::int64_t key0 = tile_index * kTileKeys;
      if (w.end <= key0 || w.begin >= key0 + kTileKeys || w.end <= w.begin) {
        if (t < kTileKeys && key0 + t < a.n) a.out[row * a.stride + key0 + t] = negative_infinity();
        continue;
      }
      // Keys past n read key n - 1 (their results are never stored): no out-of-bounds load.
      const std::int64_t b_key = key0 + column < a.n ? key0 + column : a.n - 1;
      float head_sum = 0.0f;
      for (std::int64_t h0 = 0; h0 < a.heads; h0 += kHeadsPerPass) {
        if (t < kHeadsPerPass) weights[t] = h0 + t < a.heads ? a.weights[row * a.heads + h0 + t] : 0.0f;
        __syncthreads();
        // A: head (h0 + 16 wave + column), dims 8 quarter .. + 7 of each 32; heads past `heads`
        // read as zeros.
        const std::int64_t a_head = h0 + 16 * wave + column;
        const bool a_valid = a_head < a.heads;
        const std::uint8_t* q_row = a.q + (row * a.heads + (a_valid ? a_head : 0)) * a.head_dim;
        const std::uint8_t* k_row = a.k + b_key * a.head_dim;
        float4_t acc = {0.0f, 0.0f, 0.0f, 0.0f};
        for (std::int64_t d0 = 0; d0 < a.head_dim; d0 += 32) {
          const long qa = a_valid ? load_eight(q_row + d0 + 8 * quarter) : 0;
          const long kb = load_eight(k_row + d0 + 8 * quarter);
          acc = mfma_16x16x32(qa, kb, acc);
        }
        // D: this lane holds key (key0 + column), heads h0 + 16 wave + 4 quarter + [0, 4).
        float part = 0.0f;
        for (int r = 0; r < 4; ++r)
          part = fmaf(weights[16 * wave + 4 * quarter + r], relu_keep_nan(acc[r]), part);
        partial[4 * wave + quarter][column] = part;
        __syncthreads();
        if (t < kTileKeys)
          for (int slot = 0; slot < kWaves * 4; ++slot) head_sum += partial[slot][t];
        __syncthreads();
      }
      if (t < kTileKeys && key0 + t < a.n) {
        const std::int64_t key = key0 + t;
        const bool inside = key >= w.begin && key < w.end;
        a.out[row * a.stride + key] = inside ? a.k_scale[key] * head_sum : negative_infinity();
      }
    }
  }
}

// The matrix cores this kernel needs: gfx940/941/942 (MI300), by the device's architecture name
// ("gfx942:sramecc+:xnack-"). gfx950 has the instruction too but reads OCP e4m3fn there, which
// this kernel's contract does not declare.
bool device_has_fp8_mfma() {
  int device = 0;
  hipDeviceProp_t prop{};
  check(hipGetDevice(&device), "device");
  check(hipGetDeviceProperties(&prop, device), "device properties");
  const std::string arch = prop.gcnArchName;
  return arch.rfind("gfx94", 0) == 0;
}

bool is_e4m3fnuz(const code_format& f) {
  return f.mantissa_bits == 3 && f.bias == 8 && f.nan == nan_rule::negative_zero;
}

}  // namespace

void launch_mfma_gfx942(const logits_args& a, planted_bug bug) {
  if (bug != planted_bug::none) throw std::invalid_argument("the MFMA kernel carries no planted bug");
  if (!is_e4m3fnuz(a.q_format) || !is_e4m3fnuz(a.k_format))
    throw std::invalid_argument("the gfx942 MFMA kernel consumes e4m3fnuz q and k only");
  if (a.head_dim % 32 != 0) throw std::invalid_argument("the gfx942 MFMA kernel needs head_dim % 32 == 0");
  if (!device_has_fp8_mfma()) throw std::invalid_argument("the gfx942 MFMA kernel needs a gfx940/941/942 GPU");
  if (a.n == 0 || a.m == 0) return;
  const std::int64_t tiles = (a.n + kTileKeys - 1) / kTileKeys;
  const dim3 grid(static_cast<unsigned>((tiles + kTilesPerBlock - 1) / kTilesPerBlock), grid_rows(a.m));
  mfma_logits<<<grid, kThreads>>>(a);
  check_launch("mfma_logits");
}

bool mfma_built() { return true; }

#else  // CUDA: no fp8 MFMA

void launch_mfma_gfx942(const logits_args&, planted_bug) {
  throw std::invalid_argument("the gfx942 MFMA kernel exists in HIP builds only");
}

bool mfma_built() { return false; }

#endif

}  // namespace mqa::gpu
