// The exact reference on the GPU, by the CPU reference's method (reference/exact/compute.cpp):
//
// 1. Dot products exact in float64: fp8 products are exact and every partial sum of a
//    head_dim <= 2^53 / (max_units(q) max_units(k)) term dot is a float64 (dots_exact_in_float64),
//    so the float64 tile GEMM (exact_tile.hpp) is exact in any order.
// 2. The head sum and scaling by error-free transformations (Ogita-Rump-Oishi Dot2), with the
//    bound and the float32 decision of reference/exact/head_sum.cpp, whose proof applies with one
//    change, written out here: the m = (64 * passes) terms p_k = fl(w_k r_k) are summed by
//    TwoSum along a tree (a chain of 8 heads per thread, a chain over the 8 groups, a chain over
//    passes) instead of one chain. The proof never uses the order: exactly T = s + E, where E is
//    the sum of the m product errors e_k and the m - 1 TwoSum errors q; sigma, the float sum of
//    those 2m - 1 values along the same tree, obeys the recursive-summation bound for any tree,
//    |sigma - E| <= gamma_{2m} sum(|e| + |q|); every computed partial sum of p's obeys
//    |s'| <= (1 + gamma_m) P, so sum |q| <= (m - 1) u (1 + gamma_m) P and sum |e| <= u P; hence
//    |sigma - E| <= 2 m (m + 1) u^2 P as in the chain. Zero terms (heads past `heads`, relu'd
//    dots) add exact zeros, so counting them in m only loosens the bound.
// 3. Elements with a non-finite input, and those whose enclosure touches a float32 rounding
//    boundary, are left to the CPU reference (exact_device.hpp says how they are reported).
//
// Step 1 has two engines. The float64 tile GEMM runs everywhere. On NVIDIA GPUs of compute
// capability 8.0 and later, formats whose values are integers I below 2^21 times their smallest
// positive value u (e4m3fn, e4m3fnuz: I < 2^18) take the integer tensor cores instead
// (Ozaki-style): I = sign (u2 2^14 + u1 2^7 + u0) with 0 <= u_s < 2^7 gives three signed int8
// slices; the tensor cores sum the slice products s8 x s8 -> s32 exactly (|sum| <= 3 * 127^2 *
// head_dim per shift class), the five classes are joined exactly (relu_joined: int32 pairs, then
// int64; the dot is below 2^51 for head_dim <= 512) and scaled by u_q u_k, a power of two. The
// result is the same exact dot. The products come from mma.sync (exact_tiles_int8 below) or, on
// an sm_90 device with head_dim <= 128, from wgmma (exact_wgmma.cu, the default
// there). Step 2 differs for both: the head sum is a tree of plain fused multiply-adds, and its
// bound (fma_tree_error, proved where it is defined) counts the roundings a product meets, about
// 12, where Dot2's is quadratic in u: a few more elements per million are left to the CPU in step
// 3 (2,904 of 503 million in-window at the production shape), for far fewer float64 operations.
// AMD's integer matrix cores are not used (nothing here could validate them): HIP builds keep the
// float64 engine. On the H200 the [gpu] tests find both forms equal to the CPU bit for bit (every
// shape, format and pair of finite codes they try), and mqa_gpu_full finds all three engines equal
// on all 536,870,912 logits at 8192 x 65536 x 64 x 128 (docs/measurements.md has their times).
// The integer engine is the default where it applies (exact_gpu_options::integer_dots and
// ::warpgroup_dots).
//
// Arithmetic here must round exactly as written: a contracted w * r + s would break TwoSum. The
// Dot2 steps use the _rn intrinsics on CUDA (never contracted) and plain operators under
// `#pragma clang fp contract(off)` on HIP; the build also passes -fmad=false / -ffp-contract=off.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "reference/exact/gpu/exact_args.hpp"
#include "reference/exact/gpu/exact_arith.hpp"
#include "reference/exact/gpu/exact_device.hpp"
#include "reference/exact/gpu/exact_tile.hpp"
#include "reference/gpu/device_buffer.hpp"
#include "reference/gpu/device_common.hpp"
#include "reference/gpu/staged_copy.hpp"

#if defined(__HIP__)
#pragma clang fp contract(off)
#endif

namespace mqa::gpu {
namespace {

using namespace exact_tile;
using namespace exact_kernels;

// Per row: the magnitude fold over heads (reference/exact/magnitude.hpp: |w| |q| is exact, the
// fold is summed over h in order) and whether any input of the row is non-finite.
__global__ __launch_bounds__(kThreads) void prepare_rows(exact_args e) {
  __shared__ float q_table[256];
  __shared__ int special;
  fill_decode_table(q_table, e.in.q_format, /*nonfinite_as_zero=*/true);
  if (threadIdx.x == 0) special = 0;
  __syncthreads();
  const logits_args& a = e.in;
  for (std::int64_t r = blockIdx.x; r < e.row_count; r += gridDim.x) {
    const std::int64_t i = e.rows[r];
    const std::uint8_t* q = a.q + i * a.heads * a.head_dim;
    const float* w = a.weights + i * a.heads;
    int found = 0;
    for (std::int64_t d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
      double fold = 0;
      for (std::int64_t h = 0; h < a.heads; ++h) {
        const std::uint8_t code = q[h * a.head_dim + d];
        found |= code_is_nonfinite(a.q_format, code);
        fold = add_rn(fold, mul_rn(fabs(static_cast<double>(w[h])), fabs(static_cast<double>(q_table[code]))));
      }
      e.fold[r * a.head_dim + d] = fold;
    }
    for (std::int64_t h = threadIdx.x; h < a.heads; h += blockDim.x) found |= !isfinite(w[h]);
    if (found) atomicOr(&special, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
      e.row_special[r] = static_cast<std::uint8_t>(special);
      special = 0;
    }
    __syncthreads();
  }
}

__global__ __launch_bounds__(kThreads) void prepare_keys(exact_args e) {
  const logits_args& a = e.in;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= a.n) return;
  bool special = !isfinite(a.k_scale[j]);
  for (std::int64_t d = 0; d < a.head_dim; ++d) special |= code_is_nonfinite(a.k_format, a.k[j * a.head_dim + d]);
  e.key_special[j] = special;
}

constexpr int kKeysPerLane = 4;
constexpr int kTileKeys = kLanes * kKeysPerLane;  // 128: thread t < 128 finishes key t
constexpr int kTilesPerBlock = 4;
using fp64_stage = stage<kKeysPerLane>;

__global__ __launch_bounds__(kThreads) void exact_tiles(exact_args e) {
  __shared__ float q_table[256], k_table[256];
  __shared__ double weights[kHeadsPerPass];
  __shared__ double fold[kDepth];
  __shared__ union {
    fp64_stage operands;
    struct {
      double sum[kGroups][kTileKeys], error[kGroups][kTileKeys], magnitude[kGroups][kTileKeys];
    } partial;
  } shared;
  const logits_args& a = e.in;
  fill_decode_table(q_table, a.q_format, /*nonfinite_as_zero=*/true);
  fill_decode_table(k_table, a.k_format, /*nonfinite_as_zero=*/true);
  __syncthreads();

  const int t = static_cast<int>(threadIdx.x);
  const int group = t / kLanes, lane = t % kLanes;
  const bool finisher = t < kTileKeys;
  const std::int64_t tiles = (a.n + kTileKeys - 1) / kTileKeys;
  const std::int64_t first_tile = static_cast<std::int64_t>(blockIdx.x) * kTilesPerBlock;
  const std::int64_t last_tile = first_tile + kTilesPerBlock < tiles ? first_tile + kTilesPerBlock : tiles;
  const std::int64_t passes = (a.heads + kHeadsPerPass - 1) / kHeadsPerPass;
  const double terms = static_cast<double>(passes * kHeadsPerPass);
  const double magnitude_factor = magnitude_allowance(a);

  for (std::int64_t r = blockIdx.y; r < e.row_count; r += gridDim.y) {
    const std::int64_t i = e.rows[r];
    const key_window w = clamped_window(a.ks[i], a.ke[i], a.n);
    const bool special_row = e.row_special[r] != 0;
    for (std::int64_t tile_index = first_tile; tile_index < last_tile; ++tile_index) {
      const std::int64_t key0 = tile_index * kTileKeys;
      const std::int64_t key = key0 + t;
      const std::int64_t at = r * a.n + key;
      const bool inside = key >= w.begin && key < w.end;
      if (w.end <= key0 || w.begin >= key0 + kTileKeys || w.end <= w.begin || special_row) {
        if (finisher && key < a.n) {  // a special row's in-window values come from the CPU
          e.logits[at] = inside ? 0.0f : negative_infinity();
          e.magnitude[at] = 0;
          e.undecided[at] = 0;
        }
        continue;  // uniform over the block
      }
      dot2 total;              // key `key`'s head sum over the passes so far (finishers only)
      double key_fold = 0;     // sum_d fold[d] |k[key, d]|
      for (std::int64_t h0 = 0; h0 < a.heads; h0 += kHeadsPerPass) {
        if (t < kHeadsPerPass) weights[t] = h0 + t < a.heads ? static_cast<double>(a.weights[i * a.heads + h0 + t]) : 0.0;
        __syncthreads();
        double acc[kHeadsPerGroup][kKeysPerLane] = {};
        for (std::int64_t d0 = 0; d0 < a.head_dim; d0 += kDepth) {
          load_stage(shared.operands, a, q_table, k_table, i, h0, key0, d0);
          if (t < kDepth) fold[t] = d0 + t < a.head_dim ? e.fold[r * a.head_dim + d0 + t] : 0.0;
          __syncthreads();
          accumulate_stage(shared.operands, acc, group, lane);
          if (h0 == 0 && finisher)
            for (int dd = 0; dd < kDepth; ++dd) key_fold = fma(fold[dd], fabs(shared.operands.k[dd][t]), key_fold);
          __syncthreads();
        }
        for (int c = 0; c < kKeysPerLane; ++c) {
          dot2 part;
          for (int h = 0; h < kHeadsPerGroup; ++h) {
            const double dot = acc[h][c];
            add_term(part, weights[group * kHeadsPerGroup + h], dot > 0 ? dot : 0.0);
          }
          shared.partial.sum[group][lane + kLanes * c] = part.sum;
          shared.partial.error[group][lane + kLanes * c] = part.error;
          shared.partial.magnitude[group][lane + kLanes * c] = part.magnitude;
        }
        __syncthreads();
        if (finisher)
          for (int g = 0; g < kGroups; ++g)
            join(total, {shared.partial.sum[g][t], shared.partial.error[g][t], shared.partial.magnitude[g][t]});
        __syncthreads();
      }
      if (finisher && key < a.n) {
        if (!inside) {
          e.logits[at] = negative_infinity();
          e.magnitude[at] = 0;
          e.undecided[at] = 0;
        } else {
          const double c = a.k_scale[key];
          const decision y = decide(total, c, terms, dot2_error(terms));
          const bool open = y.undecided || e.key_special[key] != 0;
          e.logits[at] = y.value;
          e.magnitude[at] = fabs(c) * key_fold * magnitude_factor;
          e.undecided[at] = open;
          if (open) atomicAdd(&e.undecided_count[r], 1u);
        }
      }
    }
  }
}

// ---- The integer tensor-core engine (NVIDIA, compute capability >= 8.0) ----

constexpr int kInt8TileKeys = 64;
constexpr int kWarpKeys = 16;  // a warp's keys: the mma's M
constexpr int kWarpHeads = 32; // a warp's heads: four of the mma's N = 8
constexpr int kHeadHalves = kInt8Pass / kWarpHeads;
constexpr int kHeadTiles = kWarpHeads / 8;
// Tiles one block takes in a row: the row's staged q serves all of them.
constexpr int kInt8TilesPerBlock = 8;
static_assert((kInt8TileKeys / kWarpKeys) * kHeadHalves * 32 == kThreads, "one warp per 16 keys x 32 heads");

// Slices of code `code`'s integer I = |value| / unit, signed, packed a byte each (slice 0 lowest).
__device__ inline std::uint32_t code_slices(const code_format& f, std::uint8_t code, double unit) {
  if (code_is_nonfinite(f, code)) return 0;
  const double v = static_cast<double>(decode_code(f, code));
  const auto units = static_cast<std::uint32_t>(fabs(v) / unit);  // exact: unit is a power of two
  const std::uint32_t sign_flip = v < 0 ? 0xFFu : 0u;
  std::uint32_t packed = 0;
  for (int slice = 0; slice < kSlices; ++slice) {
    const std::uint32_t digit = (units >> (kSliceBits * slice)) & 0x7Fu;
    const std::uint32_t byte = sign_flip ? ((0u - digit) & 0xFFu) : digit;  // two's complement of -digit
    packed |= byte << (8 * slice);
  }
  return packed;
}

__global__ __launch_bounds__(kThreads) void slice_rows(exact_args e, std::int8_t* out, std::int64_t heads_padded,
                                                       std::int64_t dim_padded, double unit) {
  __shared__ std::uint32_t table[256];
  const logits_args& a = e.in;
  for (int c = static_cast<int>(threadIdx.x); c < 256; c += kThreads)
    table[c] = code_slices(a.q_format, static_cast<std::uint8_t>(c), unit);
  __syncthreads();
  const std::int64_t per_row = heads_padded * dim_padded;
  const std::int64_t plane = e.row_count * per_row;
  for (std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; x < plane;
       x += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::int64_t r = x / per_row, h = x % per_row / dim_padded, d = x % dim_padded;
    std::uint32_t packed = 0;
    if (h < a.heads && d < a.head_dim) packed = table[a.q[(e.rows[r] * a.heads + h) * a.head_dim + d]];
    for (int slice = 0; slice < kSlices; ++slice)
      out[slice * plane + x] = static_cast<std::int8_t>(static_cast<std::uint8_t>(packed >> (8 * slice)));
  }
}

__global__ __launch_bounds__(kThreads) void slice_keys(logits_args a, std::int8_t* out, std::int64_t dim_padded,
                                                       double unit) {
  __shared__ std::uint32_t table[256];
  for (int c = static_cast<int>(threadIdx.x); c < 256; c += kThreads)
    table[c] = code_slices(a.k_format, static_cast<std::uint8_t>(c), unit);
  __syncthreads();
  const std::int64_t plane = a.n * dim_padded;
  for (std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; x < plane;
       x += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::int64_t j = x / dim_padded, d = x % dim_padded;
    const std::uint32_t packed = d < a.head_dim ? table[a.k[j * a.head_dim + d]] : 0;
    for (int slice = 0; slice < kSlices; ++slice)
      out[slice * plane + x] = static_cast<std::int8_t>(static_cast<std::uint8_t>(packed >> (8 * slice)));
  }
}

// D = A B + D for one m16n8k32 tile: a[4] (rows g, g + 8; k 4t.. and 16 + 4t..), b[2] (k 4t..,
// 16 + 4t..; column g), d[4] (rows g, g + 8; columns 2t, 2t + 1), g = lane / 4, t = lane % 4.
__device__ inline void mma_s8(std::int32_t (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)d, (void)a, (void)b0, (void)b1;
  __builtin_trap();  // never launched: the host offers this engine on compute capability >= 8.0 only
#endif
}

// The slices of one chunk of head_dim, staged in shared memory: [slice][64 heads or keys][kChunk
// bytes + 16]. The 16 bytes of padding make a row 36 words long, so the 8 rows of 16 bytes one
// ldmatrix phase reads fall in 32 different banks.
constexpr int kChunk = 128;
constexpr int kStagedRow = kChunk + 16;
constexpr int kStagedBytes = kSlices * kInt8Pass * kStagedRow;  // per operand
static_assert(kInt8TileKeys == kInt8Pass, "q and k stage the same number of rows");
// The shift classes are joined in int32 pairs (relu_joined): exact for head_dim <= 512.
[[maybe_unused]] constexpr std::int64_t kInt8MaxHeadDim = 512;  // unused where HIP builds keep float64

// The block's tiles of its rows: kInt8TilesPerBlock consecutive ones (fewer at the end of the keys).
struct tile_range {
  std::int64_t first, last;  // [first, last)
};

__device__ __forceinline__ tile_range block_tiles(std::int64_t n) {
  const std::int64_t tiles = (n + kInt8TileKeys - 1) / kInt8TileKeys;
  const std::int64_t first_tile = static_cast<std::int64_t>(blockIdx.x) * kInt8TilesPerBlock;
  const std::int64_t last_tile = first_tile + kInt8TilesPerBlock < tiles ? first_tile + kInt8TilesPerBlock : tiles;
  return {first_tile, last_tile};
}

// What thread t's copies into shared memory need, fixed for the block's run. stage and
// stage_pieces are `inline`, not __forceinline__, as the lambdas they were: clang then inlines
// them where it did, and the gfx942 code is unchanged (nvcc inlines them either way).
struct thread_staging {
  const logits_args& a;
  const int8_operands& s;
  std::int8_t* q_staged;  // q's slices (k's go where each call says)
  std::int64_t q_plane, k_plane;
  int t;

  // Thread t's weight w u_q u_k of the pass's heads from h0 (row i).
  __device__ __forceinline__ void stage_weight(double* weights, std::int64_t i, std::int64_t h0) const {
    weights[t] = h0 + t < a.heads ? mul_rn(static_cast<double>(a.weights[i * a.heads + h0 + t]), s.unit) : 0.0;
  }

  // The chunk of head_dim from d0, `chunk` bytes: k's slices of the keys from key_first into k_to,
  // and q's of row r, heads from h0, when with_q.
  __device__ inline void stage(std::int8_t* k_to, std::int64_t key_first, bool with_q, std::int64_t r, std::int64_t h0,
                               std::int64_t d0, int chunk) const {
    if (chunk == kChunk) stage_pieces(k_to, key_first, with_q, r, h0, d0, kChunk / 16);
    else stage_pieces(k_to, key_first, with_q, r, h0, d0, chunk / 16);
  }

  // Piece x of 16 bytes: slice x / (64 pieces), row (x / pieces) % 64, piece x % pieces; q's
  // rows are the pass's heads, k's the keys from key_first. Inlined per piece count, so that a
  // full chunk's divisions are shifts.
  __device__ inline void stage_pieces(std::int8_t* k_to, std::int64_t key_first, bool with_q, std::int64_t r,
                                      std::int64_t h0, std::int64_t d0, const int pieces) const {
    // A full chunk: piece t % 8 of rows t / 8 and t / 8 + 32, every slice, addresses stepped rather
    // than divided out (a few ms at the production shape; docs/measurements.md).
    if (pieces == kChunk / 16) {
      static_assert(2 * kThreads == kInt8Pass * (kChunk / 16) && kInt8Pass == 64, "two rows of 8 pieces a thread");
      const int piece = t % (kChunk / 16), first_row = t / (kChunk / 16);
      const std::int8_t* const q_from = s.q + (r * s.heads + h0 + first_row) * s.dim + d0 + 16 * piece;
      const std::int8_t* const k_from = s.k + (key_first + first_row) * s.dim + d0 + 16 * piece;
      for (int slice = 0; slice < kSlices; ++slice)
        for (int half = 0; half < 2; ++half) {
          const int row = first_row + 32 * half;
          const int to = (slice * kInt8Pass + row) * kStagedRow + 16 * piece;
          if (with_q) copy_16(q_staged + to, q_from + slice * q_plane + 32 * half * s.dim, true);
          const bool in_keys = key_first + row < a.n;
          copy_16(k_to + to, in_keys ? k_from + slice * k_plane + 32 * half * s.dim : s.k, in_keys);
        }
      return;
    }
    for (int x = t; x < kSlices * kInt8Pass * pieces; x += kThreads) {
      const int piece = x % pieces, slice_row = x / pieces;  // slice_row = slice * 64 + row
      const int slice = slice_row / kInt8Pass, row = slice_row % kInt8Pass;
      const int to = slice_row * kStagedRow + 16 * piece;
      if (with_q)
        copy_16(q_staged + to, s.q + slice * q_plane + (r * s.heads + h0 + row) * s.dim + d0 + 16 * piece, true);
      const std::int64_t column = key_first + row;
      const bool in_keys = column < a.n;
      copy_16(k_to + to, in_keys ? s.k + slice * k_plane + column * s.dim + d0 + 16 * piece : s.k, in_keys);
    }
  }
};

// The warp's 16 keys' fragments of one k-step (bytes kk.. of the chunk), every slice.
__device__ __forceinline__ void load_key_slices(std::uint32_t (&ka)[kSlices][4], const std::int8_t* k_staged, int k_row,
                                                int kk, int k_byte) {
  for (int slice = 0; slice < kSlices; ++slice)
    load_matrices(ka[slice], k_staged + (slice * kInt8Pass + k_row) * kStagedRow + kk + k_byte);
}

// The fragments of the warp's head tiles 2 pair and 2 pair + 1 for one k-step, every slice.
__device__ __forceinline__ void load_head_slices(std::uint32_t (&qb)[kSlices][4], const std::int8_t* q_staged,
                                                 int q_row, int pair, int kk, int q_byte) {
  for (int slice = 0; slice < kSlices; ++slice)
    load_matrices(qb[slice], q_staged + (slice * kInt8Pass + q_row + 16 * pair) * kStagedRow + kk + q_byte);
}

// The products of one k-step with head tiles 2 pair and 2 pair + 1: every slice pair (qs, ks) of
// the warp's keys (ka) and heads (qb), added into its shift class c[qs + ks]. (The loops over
// k-steps and head tiles, and the head sums reading c, stay in exact_tiles_int8: moved into a
// function with c passed in, they make nvcc number c's registers differently and ptxas's code
// changes.)
__device__ __forceinline__ void pair_products(std::int32_t (&c)[kShifts][kHeadTiles][4],
                                              const std::uint32_t (&ka)[kSlices][4],
                                              const std::uint32_t (&qb)[kSlices][4], int pair) {
  for (int qs = 0; qs < kSlices; ++qs)
    for (int ks = 0; ks < kSlices; ++ks) {
      mma_s8(c[qs + ks][2 * pair], ka[ks], qb[qs][0], qb[qs][1]);
      mma_s8(c[qs + ks][2 * pair + 1], ka[ks], qb[qs][2], qb[qs][3]);
    }
}

// One head of a key in the thread's chains: s += w' r and P += |w'| r, a fused multiply-add each.
__device__ __forceinline__ void add_head(double& sum, double& magnitude, double weight, double dot) {
  sum = fma(weight, dot, sum);
  magnitude = fma(fabs(weight), dot, magnitude);
}

// The quad's 4 chains of each of the thread's 2 keys added (sum_over_quad, in all 4 lanes), and
// stored by lane tg = 0 for the finisher: keys key_block + g + 8 y of head half head_half.
__device__ __forceinline__ void store_quad_sums(double (&partial_sum)[kHeadHalves][kInt8TileKeys],
                                                double (&partial_magnitude)[kHeadHalves][kInt8TileKeys],
                                                const double (&sum)[2], const double (&magnitude)[2], int head_half,
                                                int key_block, int g, int tg) {
  for (int y = 0; y < 2; ++y) {
    const double quad_sum = sum_over_quad(sum[y]), quad_magnitude = sum_over_quad(magnitude[y]);
    if (tg == 0) {
      partial_sum[head_half][key_block + g + 8 * y] = quad_sum;
      partial_magnitude[head_half][key_block + g + 8 * y] = quad_magnitude;
    }
  }
}

// The finisher's key (thread t): the 2 head halves' sums of the pass added to its head sum.
__device__ __forceinline__ void join_head_halves(dot2& total, const double (&partial_sum)[kHeadHalves][kInt8TileKeys],
                                                 const double (&partial_magnitude)[kHeadHalves][kInt8TileKeys],
                                                 int t) {
  for (int p = 0; p < kHeadHalves; ++p) {
    total.sum = add_rn(total.sum, partial_sum[p][t]);
    total.magnitude = add_rn(total.magnitude, partial_magnitude[p][t]);
  }
}

// A key (element `at`) of a tile that the row's window does not reach, or of a special row: filled
// without computing.
__device__ __forceinline__ void fill_unreached_key(const exact_args& e, std::int64_t at, bool inside) {
  // A special row's in-window values come from the CPU.
  e.logits[at] = inside ? 0.0f : negative_infinity();
  e.undecided[at] = 0;
}

// The decision and store of key `key` of row r (element `at`), from its head sum over the passes.
__device__ __forceinline__ void decide_and_store_key(const exact_args& e, std::int64_t r, std::int64_t key,
                                                     std::int64_t at, bool inside, const dot2& total, double terms,
                                                     double roundings) {
  const logits_args& a = e.in;
  if (!inside) {
    e.logits[at] = negative_infinity();
    e.undecided[at] = 0;
  } else {
    const decision y = decide(total, a.k_scale[key], terms, fma_tree_error(roundings));
    // Left open when undecided or, read only then, when the key has a non-finite input.
    bool open = y.undecided;
    if (!open) open = e.key_special[key] != 0;
    e.logits[at] = y.value;
    e.undecided[at] = open;
    if (open) atomicAdd(&e.undecided_count[r], 1u);
  }
}

// As exact_tiles, with the dots from the integer tensor cores and the head sum by plain fused
// multiply-adds (fma_tree_error's bound; exact_tiles keeps Dot2). A block owns one row and 64 keys
// at a time; warp w computes keys 16 (w % 4).. against heads 32 (w / 4).. of the pass: the mma's
// M is keys, N heads, so each thread holds 8 heads of 2 keys. It folds them in registers: for
// each, the joined dot (relu_joined), then s += w' r and P += |w'| r with w' = w u_q u_k (exact:
// the units are powers of two); the 4 lanes of a key add theirs (sum_over_quad) and one thread
// adds the 2 head halves' through shared memory. The slices are staged in shared memory (each read
// from global memory once per block, in 16-byte pieces) and read as fragments by ldmatrix. The
// magnitude bound is not computed here: exact_magnitudes does it as a GEMM.
// Two blocks per multiprocessor on NVIDIA (at most 128 registers a thread): one block's
// tensor-core phase overlaps the other's epilogue and barriers. (HIP builds never launch it;
// their compiler would refuse the occupancy target.)
#if defined(__CUDACC__)
#define MQA_INT8_BOUNDS __launch_bounds__(kThreads, 2)
#else
#define MQA_INT8_BOUNDS __launch_bounds__(kThreads)
#endif
__global__ MQA_INT8_BOUNDS void exact_tiles_int8(exact_args e, int8_operands s) {
  __shared__ __align__(16) double weights[kInt8Pass];  // w u_q u_k
  __shared__ double partial_sum[kHeadHalves][kInt8TileKeys], partial_magnitude[kHeadHalves][kInt8TileKeys];
  extern __shared__ __align__(16) std::int8_t staged[];  // q's slices, then two buffers of k's
  std::int8_t* const q_staged = staged;
  const logits_args& a = e.in;
  const int t = static_cast<int>(threadIdx.x);
  const int warp = t / 32, lane = t % 32, g = lane / 4, tg = lane % 4;
  const int key_block = (warp % 4) * kWarpKeys, head_half = warp / 4;
  // ldmatrix row addresses (see load_matrices): k rows key_block + (lane % 16), bytes 16 (lane /
  // 16)..; q rows of head tiles 2p, 2p + 1: head (lane / 16) 8 + lane % 8, bytes 16 (lane / 8 % 2)..
  const int k_row = key_block + lane % 16, k_byte = 16 * (lane / 16);
  const int q_row = head_half * kWarpHeads + (lane / 16) * 8 + lane % 8, q_byte = 16 * (lane / 8 % 2);
  const bool finisher = t < kInt8TileKeys;
  const tile_range tiles = block_tiles(a.n);
  const std::int64_t passes = (a.heads + kInt8Pass - 1) / kInt8Pass;
  const double terms = static_cast<double>(passes * kInt8Pass);
  // The most roundings one head's product meets (fma_tree_error): 8 fmas, 2 quad levels, and the
  // finisher's chain of kHeadHalves sums a pass.
  const double roundings = static_cast<double>(2 * kHeadTiles + 2 + kHeadHalves * passes);
  const std::int64_t q_plane = e.row_count * s.heads * s.dim, k_plane = a.n * s.dim;
  const std::int64_t chunks = (s.dim + kChunk - 1) / kChunk;
  // With one pass and one chunk (H <= 64, D <= 128) the row's q slices stay staged for all the
  // block's tiles; otherwise each chunk of each pass is staged where it is used.
  const bool q_kept = passes == 1 && chunks == 1;
  std::int64_t q_staged_row = -1;
  // There, too, the next tile's k slices are copied into the other buffer while this tile's are
  // multiplied: the copies' latency hides behind the tensor cores.
  int k_buffer = 0;         // the buffer this tile's k slices are in
  bool k_prefetched = false;  // this tile's k slices were copied during the tile before
  const thread_staging copies{a, s, q_staged, q_plane, k_plane, t};  // stages a chunk's slices

  for (std::int64_t r = blockIdx.y; r < e.row_count; r += gridDim.y) {
    const std::int64_t i = e.rows[r];
    const key_window w = clamped_window(a.ks[i], a.ke[i], a.n);
    const bool special_row = e.row_special[r] != 0;
    auto reached = [&](std::int64_t key0) {  // the row has keys of the tile at key0 to compute
      return !(w.end <= key0 || w.begin >= key0 + kInt8TileKeys || w.end <= w.begin || special_row);
    };
    for (std::int64_t tile_index = tiles.first; tile_index < tiles.last; ++tile_index) {
      const std::int64_t key0 = tile_index * kInt8TileKeys;
      const std::int64_t key = key0 + t;
      const std::int64_t at = r * a.n + key;
      const bool inside = key >= w.begin && key < w.end;
      if (!reached(key0)) {
        if (finisher && key < a.n) fill_unreached_key(e, at, inside);
        continue;  // uniform over the block
      }
      dot2 total;  // key `key`'s head sum over the passes so far (finishers; error stays 0)
      for (std::int64_t h0 = 0; h0 < a.heads; h0 += kInt8Pass) {
        if (t < kInt8Pass && (!q_kept || q_staged_row != r)) copies.stage_weight(weights, i, h0);  // one pass: kept
        // c[shift][head tile][x]: the slice pairs of that shift summed over head_dim.
        std::int32_t c[kShifts][kHeadTiles][4] = {};
        for (std::int64_t d0 = 0; d0 < s.dim; d0 += kChunk) {
          const int chunk = static_cast<int>(s.dim - d0 < kChunk ? s.dim - d0 : kChunk);  // a multiple of 32
          // Every warp is done with the chunk staged before: for a first chunk, the barrier before
          // the head sum of the pass or tile before saw to it.
          if (d0 > 0) __syncthreads();
          const bool stage_q = !q_kept || q_staged_row != r;
          q_staged_row = r;
          std::int8_t* const k_staged = staged + (1 + k_buffer) * kStagedBytes;
          // A prefetched tile follows one of the same row, whose q slices are kept.
          if (!k_prefetched) copies.stage(k_staged, key0, stage_q, r, h0, d0, chunk);
          copies_done();
          __syncthreads();
          // Every warp's copies into the other buffer have landed and it was last read by the
          // tile before, which every warp has finished (the barrier above).
          k_prefetched = q_kept && tile_index + 1 < tiles.last && reached(key0 + kInt8TileKeys);
          if (k_prefetched) {
            k_buffer ^= 1;
            copies.stage(staged + (1 + k_buffer) * kStagedBytes, key0 + kInt8TileKeys, false, r, h0, d0, chunk);
          }
          for (int kk = 0; kk < chunk; kk += kMmaK) {
            std::uint32_t ka[kSlices][4];
            load_key_slices(ka, k_staged, k_row, kk, k_byte);
            for (int pair = 0; pair < kHeadTiles / 2; ++pair) {
              std::uint32_t qb[kSlices][4];
              load_head_slices(qb, q_staged, q_row, pair, kk, q_byte);
              pair_products(c, ka, qb, pair);
            }
          }
        }
        // Keys key_block + g (x = 0, 1) and + g + 8 (x = 2, 3); heads 8 tile + 2 tg + x % 2.
        double sum[2] = {0, 0}, magnitude[2] = {0, 0};
        for (int tile = 0; tile < kHeadTiles; ++tile) {
          const double2 w2 = *reinterpret_cast<const double2*>(&weights[head_half * kWarpHeads + 8 * tile + 2 * tg]);
          for (int x = 0; x < 4; ++x) {
            const double dot = relu_joined(c[0][tile][x], c[1][tile][x], c[2][tile][x], c[3][tile][x], c[4][tile][x]);
            const double weight = x % 2 ? w2.y : w2.x;
            add_head(sum[x / 2], magnitude[x / 2], weight, dot);
          }
        }
        store_quad_sums(partial_sum, partial_magnitude, sum, magnitude, head_half, key_block, g, tg);
        __syncthreads();
        if (finisher) join_head_halves(total, partial_sum, partial_magnitude, t);
      }
      if (finisher && key < a.n) decide_and_store_key(e, r, key, at, inside, total, terms, roundings);
    }
  }
}

// The magnitude bound of every element, for the integer engine: |k_scale[j]| sum_d fold[r, d]
// |k[j, d]| times magnitude_factor (as exact_tiles computes it, any order of the nonnegative
// terms: magnitude_factor covers head_dim 2^-53 of them), 0 outside the window and for special
// rows (the CPU fills those). A 64-row x 64-key tile a block, 4 x 4 elements a thread, head_dim
// through shared memory 16 at a time; tiles no row's window reaches are only filled with 0.
constexpr int kMagnitudeTile = 64;
constexpr int kMagnitudeDepth = 16;

__global__ __launch_bounds__(kThreads) void exact_magnitudes(exact_args e) {
  __shared__ double k_magnitudes[256];  // |decoded code|, non-finite as 0
  // One double of padding a row: the 16 depths a row stores land in 16 different bank pairs.
  __shared__ double fold[kMagnitudeDepth][kMagnitudeTile + 1], key[kMagnitudeDepth][kMagnitudeTile + 1];
  __shared__ std::int32_t window_begin[kMagnitudeTile], window_end[kMagnitudeTile];
  const logits_args& a = e.in;
  {
    __shared__ float k_table[256];
    fill_decode_table(k_table, a.k_format, /*nonfinite_as_zero=*/true);
    __syncthreads();
    for (int c = static_cast<int>(threadIdx.x); c < 256; c += kThreads) k_magnitudes[c] = fabs(static_cast<double>(k_table[c]));
  }
  const int t = static_cast<int>(threadIdx.x);
  const int row_lane = t / 16, key_lane = t % 16;  // rows row_lane + 16 y, keys key_lane + 16 x
  const double magnitude_factor = magnitude_allowance(a);
  const std::int64_t key0 = static_cast<std::int64_t>(blockIdx.x) * kMagnitudeTile;
  for (std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kMagnitudeTile; r0 < e.row_count;
       r0 += static_cast<std::int64_t>(gridDim.y) * kMagnitudeTile) {
    bool reaches = false;  // some row of the tile has a key of the tile in its window
    if (t < kMagnitudeTile) {
      std::int32_t begin = 0, end = 0;  // empty: past the rows, or a special row
      if (r0 + t < e.row_count && e.row_special[r0 + t] == 0) {
        const std::int64_t i = e.rows[r0 + t];
        const key_window w = clamped_window(a.ks[i], a.ke[i], a.n);
        begin = static_cast<std::int32_t>(w.begin);
        end = static_cast<std::int32_t>(w.end);
      }
      window_begin[t] = begin;
      window_end[t] = end;
      reaches = begin < end && end > key0 && begin < key0 + kMagnitudeTile;
    }
    const bool reached = __syncthreads_or(reaches) != 0;  // also publishes window_*
    double acc[4][4] = {};
    if (reached) {  // uniform over the block
      for (std::int64_t d0 = 0; d0 < a.head_dim; d0 += kMagnitudeDepth) {
        for (int x = t; x < kMagnitudeDepth * kMagnitudeTile; x += kThreads) {
          const int dd = x % kMagnitudeDepth, row = x / kMagnitudeDepth;
          const bool in_depth = d0 + dd < a.head_dim;
          fold[dd][row] = in_depth && r0 + row < e.row_count ? e.fold[(r0 + row) * a.head_dim + d0 + dd] : 0.0;
          key[dd][row] = in_depth && key0 + row < a.n ? k_magnitudes[a.k[(key0 + row) * a.head_dim + d0 + dd]] : 0.0;
        }
        __syncthreads();
        for (int dd = 0; dd < kMagnitudeDepth; ++dd) {
          double f[4], k[4];
          for (int y = 0; y < 4; ++y) f[y] = fold[dd][row_lane + 16 * y];
          for (int x = 0; x < 4; ++x) k[x] = key[dd][key_lane + 16 * x];
          for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x) acc[y][x] = fma(f[y], k[x], acc[y][x]);
        }
        __syncthreads();
      }
    }
    for (int y = 0; y < 4; ++y) {
      const int row = row_lane + 16 * y;
      if (r0 + row >= e.row_count) continue;
      for (int x = 0; x < 4; ++x) {
        const std::int64_t j = key0 + key_lane + 16 * x;
        if (j >= a.n) continue;
        const bool inside = j >= window_begin[row] && j < window_end[row];
        e.magnitude[(r0 + row) * a.n + j] =
            inside ? fabs(static_cast<double>(a.k_scale[j])) * acc[y][x] * magnitude_factor : 0.0;
      }
    }
    __syncthreads();  // window_* are rewritten for the next rows
  }
}

// Device memory kept between calls (a full-size case needs gigabytes; allocating once pays).
struct exact_buffers {
  device_inputs inputs;
  device_buffer rows, fold, row_special, key_special, logits, magnitude, undecided, undecided_count;
  device_buffer q_slices, k_slices;
};

exact_buffers& buffers() {
  static exact_buffers b;
  return b;
}

// The smallest positive and the largest finite magnitude of a format (0, 0 when it has none).
struct magnitude_range {
  double smallest = 0, largest = 0;
};

magnitude_range value_range(const code_format& f) {
  magnitude_range r;
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    if (code_is_nonfinite(f, code)) continue;
    const double v = std::fabs(static_cast<double>(decode_code(f, code)));
    if (v > 0 && (r.smallest == 0 || v < r.smallest)) r.smallest = v;
    r.largest = std::max(r.largest, v);
  }
  return r;
}

// Every value as an integer multiple of the smallest: the largest such integer.
double max_units(const code_format& f) {
  const magnitude_range r = value_range(f);
  return r.smallest == 0 ? 0 : r.largest / r.smallest;
}

}  // namespace

bool dots_exact_in_float64(const code_format& q, const code_format& k, std::int64_t head_dim) {
  return max_units(q) * max_units(k) * static_cast<double>(head_dim) <= 0x1p53;
}

bool integer_dots_available() {
#if defined(__CUDACC__)
  // The device, and the code this build runs on it: a build for an older architecture that the
  // driver compiles from PTX has __CUDA_ARCH__ < 800 in its kernels, where mma_s8 only traps.
  static const bool available = [] {
    int device = 0;
    hipDeviceProp_t prop{};
    if (hipGetDevice(&device) != hipSuccess || hipGetDeviceProperties(&prop, device) != hipSuccess) return false;
    cudaFuncAttributes kernel{};
    if (cudaFuncGetAttributes(&kernel, exact_tiles_int8) != cudaSuccess) return false;
    return prop.major >= 8 && kernel.ptxVersion >= 80 && kernel.binaryVersion >= 80;
  }();
  return available;
#else
  return false;
#endif
}

bool warpgroup_dots_available() { return integer_dots_available() && exact_wgmma_unsupported(kMmaK) == nullptr; }

namespace {

// Why the integer engine cannot take this problem, or nullptr. Needs: NVIDIA compute capability
// 8.0 (mma.sync s8), every value an integer below 2^21 times its format's smallest (three 7-bit
// slices), head_dim <= 512 (the int32 join of the shift classes; the float64 join needs
// dots_exact_in_float64).
const char* why_not_int8(const host_problem& p) {
#if defined(__CUDACC__)
  if (!integer_dots_available()) return "integer tensor cores need compute capability 8.0 (device and build)";
  if (max_units(p.q_format) >= 0x1p21 || max_units(p.k_format) >= 0x1p21)
    return "the formats' values need more than three 7-bit slices (e5m2)";
  if (p.head_dim > kInt8MaxHeadDim) return "head_dim above 512 (the shift classes are joined in int32)";
  return nullptr;
#else
  (void)p;
  return "AMD integer matrix cores are not used (not validated)";
#endif
}

void launch_exact_tiles_int8(const exact_args& e, const int8_operands& s) {
  const std::int64_t tiles = (e.in.n + kInt8TileKeys - 1) / kInt8TileKeys;
  const dim3 grid(static_cast<unsigned>((tiles + kInt8TilesPerBlock - 1) / kInt8TilesPerBlock), grid_rows(e.row_count));
  const int staged_bytes = 3 * kStagedBytes;  // q, and k twice
#if defined(__CUDACC__)
  check(cudaFuncSetAttribute(exact_tiles_int8, cudaFuncAttributeMaxDynamicSharedMemorySize, staged_bytes),
        "exact_tiles_int8 shared memory");
#endif
  exact_tiles_int8<<<grid, kThreads, staged_bytes>>>(e, s);
  check_launch("exact_tiles_int8");
}

}  // namespace

void exact_on_device(const host_problem& p, const std::int64_t* rows, std::int64_t row_count,
                     exact_device_output& out, const std::function<void()>& while_running, bool integer_dots,
                     bool warpgroup_dots, const model::chain_rule* model) {
  exact_buffers& b = buffers();
  exact_args e;
  e.in = b.inputs.upload(p);
  e.row_count = row_count;
  const auto count = static_cast<std::size_t>(row_count);
  const auto cells = count * static_cast<std::size_t>(p.n);
  b.rows.upload(rows, count * sizeof(std::int64_t), "upload rows");
  b.fold.reserve(std::max<std::size_t>(1, count * static_cast<std::size_t>(p.head_dim) * sizeof(double)), "fold");
  b.row_special.reserve(std::max<std::size_t>(1, count), "row flags");
  b.key_special.reserve(std::max<std::size_t>(1, static_cast<std::size_t>(p.n)), "key flags");
  b.logits.reserve(std::max<std::size_t>(1, cells * sizeof(float)), "exact logits");
  b.magnitude.reserve(std::max<std::size_t>(1, cells * sizeof(double)), "exact magnitude");
  b.undecided.reserve(std::max<std::size_t>(1, cells), "undecided mask");
  b.undecided_count.reserve(std::max<std::size_t>(1, count * sizeof(unsigned)), "undecided counts");
  e.rows = b.rows.as<const std::int64_t>();
  e.fold = b.fold.as<double>();
  e.row_special = b.row_special.as<std::uint8_t>();
  e.key_special = b.key_special.as<std::uint8_t>();
  e.logits = b.logits.as<float>();
  e.magnitude = b.magnitude.as<double>();
  e.undecided = b.undecided.as<std::uint8_t>();
  e.undecided_count = b.undecided_count.as<unsigned>();
  out.undecided.clear();
  out.special_row.assign(count, 0);
  out.kernel_seconds = 0;
  if (row_count == 0 || p.n == 0) {
    while_running();
    return;
  }
  check(hipMemset(e.undecided_count, 0, count * sizeof(unsigned)), "clear undecided counts");

  hipEvent_t start, stop;
  check(hipEventCreate(&start), "event");
  check(hipEventCreate(&stop), "event");
  check(hipEventRecord(start), "event record");
  prepare_rows<<<grid_rows(row_count), kThreads>>>(e);
  check_launch("prepare_rows");
  prepare_keys<<<static_cast<unsigned>((p.n + kThreads - 1) / kThreads), kThreads>>>(e);
  check_launch("prepare_keys");
  const bool int8 = model == nullptr && integer_dots && why_not_int8(p) == nullptr;
  out.dot_engine = int8 ? "int8 tensor cores (mma.sync s8, 3 slices)" : "float64";
  if (model != nullptr) {
    out.dot_engine = launch_centre_tiles(e, *model);  // names the model's form it took
  } else if (int8) {
    int8_operands s;
    s.heads = (p.heads + kInt8Pass - 1) / kInt8Pass * kInt8Pass;
    s.dim = (p.head_dim + kMmaK - 1) / kMmaK * kMmaK;
    const double unit_q = value_range(p.q_format).smallest, unit_k = value_range(p.k_format).smallest;
    s.unit = unit_q * unit_k;
    const auto q_bytes = static_cast<std::size_t>(kSlices * row_count * s.heads * s.dim);
    const auto k_bytes = static_cast<std::size_t>(kSlices * p.n * s.dim);
    b.q_slices.reserve(std::max<std::size_t>(1, q_bytes), "q slices");
    b.k_slices.reserve(std::max<std::size_t>(1, k_bytes), "k slices");
    slice_rows<<<4096, kThreads>>>(e, b.q_slices.as<std::int8_t>(), s.heads, s.dim, unit_q);
    check_launch("slice_rows");
    slice_keys<<<4096, kThreads>>>(e.in, b.k_slices.as<std::int8_t>(), s.dim, unit_k);
    check_launch("slice_keys");
    s.q = b.q_slices.as<const std::int8_t>();
    s.k = b.k_slices.as<const std::int8_t>();
    if (warpgroup_dots && exact_wgmma_unsupported(s.dim) == nullptr) {
      out.dot_engine = "int8 tensor cores (wgmma s8, 3 slices)";
      launch_exact_tiles_wgmma(e, s);
    } else {
      launch_exact_tiles_int8(e, s);
    }
    const dim3 magnitude_grid(static_cast<unsigned>((p.n + kMagnitudeTile - 1) / kMagnitudeTile),
                              grid_rows((row_count + kMagnitudeTile - 1) / kMagnitudeTile));
    exact_magnitudes<<<magnitude_grid, kThreads>>>(e);
    check_launch("exact_magnitudes");
  } else {
    const std::int64_t tiles = (p.n + kTileKeys - 1) / kTileKeys;
    const dim3 grid(static_cast<unsigned>((tiles + kTilesPerBlock - 1) / kTilesPerBlock), grid_rows(row_count));
    exact_tiles<<<grid, kThreads>>>(e);
    check_launch("exact_tiles");
  }
  check(hipEventRecord(stop), "event record");
  while_running();
  check(hipEventSynchronize(stop), "exact reference kernels");
  float ms = 0;
  check(hipEventElapsedTime(&ms, start, stop), "event time");
  (void)hipEventDestroy(start);
  (void)hipEventDestroy(stop);
  out.kernel_seconds = ms / 1e3;

  copy_to_host_staged(out.logits, e.logits, cells * sizeof(float), "download logits");
  copy_to_host_staged(out.magnitude, e.magnitude, cells * sizeof(double), "download magnitude");
  check(hipMemcpy(out.special_row.data(), e.row_special, count, hipMemcpyDeviceToHost), "download row flags");
  std::vector<unsigned> open(count);
  check(hipMemcpy(open.data(), e.undecided_count, count * sizeof(unsigned), hipMemcpyDeviceToHost),
        "download undecided counts");
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(p.n));
  for (std::size_t r = 0; r < count; ++r) {
    if (open[r] == 0) continue;
    check(hipMemcpy(mask.data(), e.undecided + r * static_cast<std::size_t>(p.n), mask.size(), hipMemcpyDeviceToHost),
          "download undecided mask");
    for (std::int64_t j = 0; j < p.n; ++j)
      if (mask[static_cast<std::size_t>(j)]) out.undecided.emplace_back(static_cast<std::int64_t>(r), j);
  }
}

}  // namespace mqa::gpu
