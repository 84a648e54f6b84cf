// The exact reference's integer engine in its Hopper form: the same slices, the same exact int32
// sums of slice products and the same head-sum bound as exact_tiles_int8 (exact_kernel.hip, whose
// opening comment is the proof), with the products made by wgmma (sm_90a) instead of mma.sync.
//
// Why a second form: at the production shape mma.sync kept the tensor pipe busy about a third of
// the time (docs/measurements.md). wgmma is asynchronous and reads its B operand straight from
// shared memory, so a warp issues a part's 36 products (4 k-steps x 9 slice pairs) in a few dozen
// instructions and then waits, while the other blocks on the multiprocessor run their epilogues.
//
// A block is one warpgroup (128 threads) and owns one row and 64 keys at a time. The mma's M is
// the 64 keys, A from registers (each warp loads its 16 keys' slices with ldmatrix, the layout
// both mma forms share); N is 32 heads, B the row's q slices, staged once per row in the
// descriptor layout of wgmma.cuh. A pass's 64 heads are two parts of 32, one after the other, so
// a shift class's accumulators are 16 registers, not 32: 168 registers a thread and three blocks
// a multiprocessor, where n64 needed 255 and allowed two (that change alone took about 5% off the
// kernels' time at the production shape; docs/measurements.md has each step's time).
// Thread (warp w, lane l) holds keys 16 w + l / 4 (+ 8) x heads 32 part + 8 j + 2 (l % 4) (+ 1),
// j < 4: 8 heads of each of its 2 keys a part. It joins each dot's five shift classes
// (relu_joined), sums w' r and |w'| r over its 8 heads of a part in one chain of 8 fused
// multiply-adds, joins the two parts' chains by one addition, then sums over the quad (2 levels)
// and over passes: a product meets at most 8 + 1 + 2 + passes roundings (fma_tree_error's h), as
// with n64's two chains of 8. Lanes l % 4 = 0, 1 decide and store keys 16 w + l / 4 and + 8: no
// shared memory and no barrier in the epilogue.
//
// head_dim <= 128 (the row's q slices, 24 KiB, and two buffers of the keys', 48 KiB, stay
// staged): the host keeps the mma.sync form for longer rows.
#include <cstdint>
#include <stdexcept>

#include "reference/exact/gpu/exact_args.hpp"
#include "reference/exact/gpu/exact_arith.hpp"
#include "reference/gpu/device_common.hpp"
#include "reference/gpu/launch_check.hpp"
#include "reference/gpu/wgmma.cuh"

namespace mqa::gpu {
namespace {

using namespace exact_kernels;

constexpr int kWarpgroup = 128;
constexpr int kTileKeys = 64;  // the wgmma's M, 16 a warp
constexpr int kPartHeads = 32;  // the wgmma's N
constexpr int kMaxSteps = 4;    // k-steps of 32: head_dim <= 128
constexpr int kBlocksPerSm = 3;
static_assert(kInt8Pass == 2 * kPartHeads, "a pass is 64 heads, one 64-row q tile, in two parts");
// A staged key row is 128 bytes with its 16-byte pieces swizzled, piece p of row r at p ^ (r % 8):
// the 8 rows an ldmatrix phase reads then fall in 32 different banks, without padding (which
// would not leave room for three blocks a multiprocessor).
constexpr int kKeyRow = kMaxSteps * kMmaK;
constexpr int kKeyBytes = kSlices * kTileKeys * kKeyRow;                           // one buffer
constexpr int kQBytes = kSlices * kMaxSteps * static_cast<int>(sm90::kTileBytes);  // [slice][step] tiles
constexpr int kSharedBytes = kQBytes + 2 * kKeyBytes;

// Staging, keys and q alike: thread t copies piece t % 8 (bytes 16 (t % 8)..) of rows t / 8 +
// 16 x, x < 12 (4 row groups of each slice); pieces past the row's kPieces, and keys past n,
// are zeros. Only the tile's first key and the buffer change from call to call.
constexpr int kRowGroups = kTileKeys / 16;

// What thread t's copies need, fixed for the block's run.
struct thread_staging {
  const logits_args& a;
  const int8_operands& s;
  std::int8_t* staged;   // q's tiles, then two buffers of k's rows
  std::int8_t* q_tiles;  // = staged
  std::int64_t q_plane, k_plane;
  int piece, row0;
  bool piece_in_row;        // piece < kPieces
  std::int64_t row_stride;  // bytes between a thread's rows in global memory

  // The tile of keys from key_first into buffer `buffer`.
  __device__ __forceinline__ void stage_keys(int buffer, std::int64_t key_first) const {
    const std::int8_t* from = s.k + (key_first + row0) * s.dim + 16 * piece;
    std::int8_t* const to = staged + kQBytes + buffer * kKeyBytes + row0 * kKeyRow + 16 * (piece ^ (row0 % 8));
    if (key_first + kTileKeys <= a.n) {  // every key of the tile exists: no per-copy bounds (uniform)
#pragma unroll 1
      for (int slice = 0; slice < kSlices; ++slice, from += k_plane) {
        const std::int8_t* row = from;
        for (int group = 0; group < kRowGroups; ++group, row += row_stride)
          copy_16(to + (slice * kTileKeys + 16 * group) * kKeyRow, piece_in_row ? row : s.k, piece_in_row);
      }
      return;
    }
    for (int x = 0; x < kSlices * kRowGroups; ++x) {
      const int slice = x / kRowGroups, group = x % kRowGroups;
      const bool valid = piece_in_row && key_first + row0 + 16 * group < a.n;
      copy_16(to + (slice * kTileKeys + 16 * group) * kKeyRow,
              valid ? from + slice * k_plane + group * row_stride : s.k, valid);
    }
  }

  // The pass's weights w u_q u_k (row i) and q tiles (row r, heads from h0).
  __device__ __forceinline__ void stage_pass(double* weights, int t, std::int64_t i, std::int64_t r,
                                             std::int64_t h0) const {
    // Every warp has waited for its products of the q tiles staged before, and read the
    // weights: its epilogue came before this barrier.
    __syncthreads();
    if (t < kInt8Pass)
      weights[t] = h0 + t < a.heads ? mul_rn(static_cast<double>(a.weights[i * a.heads + h0 + t]), s.unit) : 0.0;
    stage_q(r, h0);
  }

  // The pass's heads into the descriptor layout: piece p of head h is bytes 16 (p % 2).. of k-step
  // p / 2's tile, one core-matrix row; heads 16 apart are 512 bytes apart there.
  __device__ __forceinline__ void stage_q(std::int64_t r, std::int64_t h0) const {
    const std::int8_t* const from = s.q + (r * s.heads + h0 + row0) * s.dim + 16 * piece;
    std::int8_t* const to = q_tiles + (piece / 2) * sm90::kTileBytes + sm90::tile_offset(row0, 16u * (piece % 2));
    for (int x = 0; x < kSlices * kRowGroups; ++x) {
      const int slice = x / kRowGroups, group = x % kRowGroups;
      copy_16(to + slice * kMaxSteps * sm90::kTileBytes + group * 512,
              piece_in_row ? from + slice * q_plane + group * row_stride : s.q, piece_in_row);
    }
  }
};

// The products of one part over the k-steps: this warp's 16 keys (k_rows, the lane's row; k_half
// and k_swizzle place its 16 bytes) times the part's 32 heads (the q tiles of q_descriptor), into
// c[shift]. Two sets of fragments alternate: a set is reloaded only once the products reading it
// are done (wait_pending), so at most two k-steps are queued on the tensor cores.
template <int Steps>
__device__ __forceinline__ void part_products(std::int32_t (&c)[kShifts][kPartHeads / 2], const std::int8_t* k_rows,
                                              int k_half, int k_swizzle, std::uint64_t q_descriptor, int part) {
  std::uint32_t ka[2][kSlices][4];
  // The part's heads start (kPartHeads / 16) x 512 bytes into each q tile.
  const std::uint64_t part_descriptor =
      q_descriptor + static_cast<std::uint64_t>(part * (kPartHeads / 16) * 512 / 16);
  for (int step = 0; step < Steps; ++step) {
    if (step >= 2) sm90::wait_pending<1>();
    std::uint32_t(&f)[kSlices][4] = ka[step % 2];
    const int at = 16 * ((2 * step + k_half) ^ k_swizzle);
    for (int slice = 0; slice < kSlices; ++slice)
      load_matrices(f[slice], k_rows + slice * kTileKeys * kKeyRow + at);
    sm90::fence();
    for (int qs = 0; qs < kSlices; ++qs) {
      const std::uint64_t b = part_descriptor + (qs * kMaxSteps + step) * sm90::kTileBytes / 16;
      for (int ks = 0; ks < kSlices; ++ks) {
        // A class's first product (step 0, the smallest qs) overwrites c[qs + ks].
        if (step == 0 && (qs == 0 || ks == kSlices - 1))
          sm90::mma_m64n32k32_s8<false>(c[qs + ks], f[ks], b);
        else
          sm90::mma_m64n32k32_s8<true>(c[qs + ks], f[ks], b);
      }
    }
    sm90::commit();
  }
  sm90::wait_all();
}

// The part's head sums: for each of the thread's 2 keys, one chain of 8 fused multiply-adds over
// its 8 heads of the part, of w' r into sum and of |w'| r into magnitude.
__device__ __forceinline__ void part_head_sums(double (&sum)[2], double (&magnitude)[2],
                                               const std::int32_t (&c)[kShifts][kPartHeads / 2], const double* weights,
                                               int part, int tg) {
  // c[.][4 j + 2 y + x]: key 16 warp + g + 8 y, head 32 part + 8 j + 2 tg + x of the pass.
  const double* const part_weights = weights + part * kPartHeads + 2 * tg;
  for (int y = 0; y < 2; ++y) sum[y] = 0, magnitude[y] = 0;
  for (int j = 0; j < kPartHeads / 8; ++j) {
    const double2 w2 = *reinterpret_cast<const double2*>(&part_weights[8 * j]);
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x) {
        const int at = 4 * j + 2 * y + x;
        const double dot = relu_joined(c[0][at], c[1][at], c[2][at], c[3][at], c[4][at]);
        const double weight = x ? w2.y : w2.x;
        sum[y] = fma(weight, dot, sum[y]);
        magnitude[y] = fma(fabs(weight), dot, magnitude[y]);
      }
  }
}

// A tile of the block that the row's window [begin, end) does not reach, or of a special row:
// its keys are filled without computing.
__device__ __forceinline__ void fill_unreached_tile(const exact_args& e, std::int64_t r, std::int64_t begin,
                                                    std::int64_t end, std::int64_t key0, int t) {
  const logits_args& a = e.in;
  const std::int64_t key = key0 + t;
  if (t < kTileKeys && key < a.n) {  // a special row's in-window values come from the CPU
    const bool inside = key >= begin && key < end;
    e.logits[r * a.n + key] = inside ? 0.0f : negative_infinity();
    e.undecided[r * a.n + key] = 0;
  }
}

// The decision and store of key my_key of row r, whose window is [begin, end) (lanes tg = 0, 1:
// keys 16 warp + g + 8 tg; total[y] holds key 16 warp + g + 8 y's head sum).
__device__ __forceinline__ void decide_and_store_key(const exact_args& e, std::int64_t r, std::int64_t begin,
                                                     std::int64_t end, std::int64_t my_key, const dot2 (&total)[2],
                                                     int tg, float k_scale, bool k_special, double terms,
                                                     double roundings) {
  const logits_args& a = e.in;
  const std::int64_t at = r * a.n + my_key;
  if (my_key < begin || my_key >= end) {
    e.logits[at] = negative_infinity();
    e.undecided[at] = 0;
  } else {
    const decision d = decide(tg == 0 ? total[0] : total[1], k_scale, terms, fma_tree_error(roundings));
    const bool open = d.undecided || k_special;
    e.logits[at] = d.value;
    e.undecided[at] = open;
    if (open) atomicAdd(&e.undecided_count[r], 1u);
  }
}

// A block takes tiles_per_block consecutive tiles of its row: its q staging and its first tile's
// (not prefetched) key staging are paid once for them all.
template <int Steps>
__global__ __launch_bounds__(kWarpgroup, kBlocksPerSm) void exact_tiles_wgmma(exact_args e, int8_operands s,
                                                                              int tiles_per_block) {
  constexpr int kPieces = Steps * kMmaK / 16;             // 16-byte pieces of a staged row
  constexpr int kParts = kInt8Pass / kPartHeads;
  __shared__ __align__(16) double weights[kInt8Pass];     // w u_q u_k
  extern __shared__ __align__(128) std::int8_t staged[];  // q's tiles, then two buffers of k's rows
  std::int8_t* const q_tiles = staged;
  const logits_args& a = e.in;

  const int t = static_cast<int>(threadIdx.x);
  const int warp = t / 32, lane = t % 32, g = lane / 4, tg = lane % 4;
  const std::int64_t tiles = (a.n + kTileKeys - 1) / kTileKeys;
  const std::int64_t first_tile = static_cast<std::int64_t>(blockIdx.x) * tiles_per_block;
  const std::int64_t last_tile = first_tile + tiles_per_block < tiles ? first_tile + tiles_per_block : tiles;
  const std::int64_t passes = (a.heads + kInt8Pass - 1) / kInt8Pass;
  const double terms = static_cast<double>(passes * kInt8Pass);
  const double roundings = static_cast<double>(8 + 1 + 2 + passes);
  const std::int64_t q_plane = e.row_count * s.heads * s.dim, k_plane = a.n * s.dim;
  const bool q_kept = passes == 1;  // one pass: the row's q tiles and weights serve all its tiles
  std::int64_t q_staged_row = -1;
  int k_buffer = 0;
  // The q tiles' descriptor; a tile's is this one plus its offset / 16 (the start address field
  // holds bits 4..17 of a shared-memory address, below 2^18: adding never carries out of it).
  const std::uint64_t q_descriptor = sm90::descriptor(q_tiles);
  bool k_prefetched = false;

  // Staging (thread_staging): thread t copies piece t % 8 of rows t / 8 + 16 x.
  const int piece = t % 8, row0 = t / 8;
  const bool piece_in_row = piece < kPieces;
  const std::int64_t row_stride = 16 * s.dim;  // bytes between a thread's rows in global memory
  const thread_staging copies{a, s, staged, q_tiles, q_plane, k_plane, piece, row0, piece_in_row, row_stride};

  for (std::int64_t r = blockIdx.y; r < e.row_count; r += gridDim.y) {
    const std::int64_t i = e.rows[r];
    const key_window w = clamped_window(a.ks[i], a.ke[i], a.n);
    const bool special_row = e.row_special[r] != 0;
    auto reached = [&](std::int64_t key0) {  // the row has keys of the tile at key0 to compute
      return !(w.end <= key0 || w.begin >= key0 + kTileKeys || w.end <= w.begin || special_row);
    };
    for (std::int64_t tile_index = first_tile; tile_index < last_tile; ++tile_index) {
      const std::int64_t key0 = tile_index * kTileKeys;
      if (!reached(key0)) {
        fill_unreached_tile(e, r, w.begin, w.end, key0, t);
        continue;  // uniform over the block
      }
      // Lanes tg = 0, 1 of a quad decide its keys 16 warp + g + 8 tg (every lane of the quad ends
      // with both head sums); what they read of their key is loaded now, the products hiding it.
      const std::int64_t my_key = key0 + 16 * warp + g + 8 * tg;
      const bool deciding = tg < 2 && my_key < a.n;
      const float k_scale = deciding ? a.k_scale[my_key] : 0.0f;
      const bool k_special = deciding && e.key_special[my_key] != 0;
      dot2 total[2];  // keys 16 warp + g + 8 y: the head sum over the passes so far (error stays 0)
      for (std::int64_t h0 = 0; h0 < a.heads; h0 += kInt8Pass) {
        if (!q_kept || q_staged_row != r) {
          copies.stage_pass(weights, t, i, r, h0);
          q_staged_row = r;
        }
        const int current = k_buffer;
        if (!k_prefetched) copies.stage_keys(current, key0);
        copies_done();
        sm90::fence_shared_for_wgmma();  // cp.async wrote them; the tensor cores read them
        __syncthreads();
        // The other buffer was last read (by ldmatrix, synchronously) in the tile before, which
        // every warp finished before the barrier above: the next tile's keys go there now.
        k_prefetched = q_kept && tile_index + 1 < last_tile && reached(key0 + kTileKeys);
        if (k_prefetched) {
          k_buffer ^= 1;
          copies.stage_keys(k_buffer, key0 + kTileKeys);
        }
        // This warp's 16 keys, a k-step's three slices at a time: rows 16 warp + l % 16, logical
        // bytes 16 (l / 16).. (swizzled with the row's l % 8).
        const std::int8_t* const k_rows = staged + kQBytes + current * kKeyBytes + (16 * warp + lane % 16) * kKeyRow;
        const int k_half = lane / 16, k_swizzle = lane % 8;
        // Each part's chains (heads below 32 of the pass, then from 32) for the thread's 2 keys;
        // the first part's are kept in first_*. (This loop stays here: moved into a function with
        // the chains passed in, nvcc numbers their registers differently and ptxas's code changes.)
        double sum[2], magnitude[2], first_sum[2], first_magnitude[2];
        // Not unrolled: the two parts' code scheduled together outgrows 168 registers and spills.
#pragma unroll 1
        for (int part = 0; part < kParts; ++part) {
          // c[shift]: the slice pairs (qs, ks) with qs + ks = shift, summed over head_dim.
          std::int32_t c[kShifts][kPartHeads / 2];
          part_products<Steps>(c, k_rows, k_half, k_swizzle, q_descriptor, part);
          part_head_sums(sum, magnitude, c, weights, part, tg);
          if (part == 0)
            for (int y = 0; y < 2; ++y) first_sum[y] = sum[y], first_magnitude[y] = magnitude[y];
        }
        for (int y = 0; y < 2; ++y) {
          total[y].sum = add_rn(total[y].sum, sum_over_quad(add_rn(first_sum[y], sum[y])));
          total[y].magnitude = add_rn(total[y].magnitude, sum_over_quad(add_rn(first_magnitude[y], magnitude[y])));
        }
      }
      if (deciding)
        decide_and_store_key(e, r, w.begin, w.end, my_key, total, tg, k_scale, k_special, terms, roundings);
    }
  }
}

// 32 tiles a block where that still makes four full waves of blocks, fewer (down to 8) on small
// problems so that every multiprocessor gets work.
int tiles_per_block(std::int64_t tiles, std::int64_t rows) {
  static const int sms = [] {
    int device = 0, count = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
                   cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) == cudaSuccess
               ? count
               : 132;
  }();
  const std::int64_t rows_on_grid = grid_rows(rows);
  int per_block = 32;
  while (per_block > 8 && (tiles + per_block - 1) / per_block * rows_on_grid < 4LL * kBlocksPerSm * sms) per_block /= 2;
  return per_block;
}

template <int Steps>
void launch(const exact_args& e, const int8_operands& s) {
  auto kernel = exact_tiles_wgmma<Steps>;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes),
        "exact_tiles_wgmma shared memory");
  // Three blocks' 72.5 KiB need the largest shared-memory carveout.
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared),
        "exact_tiles_wgmma shared memory carveout");
  const std::int64_t tiles = (e.in.n + kTileKeys - 1) / kTileKeys;
  const int per_block = tiles_per_block(tiles, e.row_count);
  const dim3 grid(static_cast<unsigned>((tiles + per_block - 1) / per_block), grid_rows(e.row_count));
  kernel<<<grid, kWarpgroup, kSharedBytes>>>(e, s, per_block);
  check_launch("exact_tiles_wgmma");
}

}  // namespace

const char* exact_wgmma_unsupported(std::int64_t padded_dim) {
  static const bool hopper = [] {
    int device = 0;
    cudaDeviceProp prop{};
    return cudaGetDevice(&device) == cudaSuccess && cudaGetDeviceProperties(&prop, device) == cudaSuccess &&
           prop.major == 9 && prop.minor == 0;
  }();
  if (!hopper) return "wgmma needs an sm_90 device (H100, H200)";
  if (padded_dim > kMaxSteps * kMmaK) return "head_dim above 128 (the Hopper form keeps a row's q slices staged)";
  return nullptr;
}

void launch_exact_tiles_wgmma(const exact_args& e, const int8_operands& s) {
  switch (s.dim / kMmaK) {
    case 1:
      return launch<1>(e, s);
    case 2:
      return launch<2>(e, s);
    case 3:
      return launch<3>(e, s);
    case 4:
      return launch<4>(e, s);
    default:
      throw std::invalid_argument("exact_tiles_wgmma: head_dim must be padded to 32..128");
  }
}

}  // namespace mqa::gpu
