// The exact reference's integer engine in its Hopper form: the same slices, the same exact int32
// sums of slice products and the same head-sum bound as exact_tiles_int8 (exact_kernel.hip, whose
// opening comment is the proof), with the products made by wgmma (sm_90a) instead of mma.sync.
//
// Why a second form: at the production shape mma.sync kept the tensor pipe busy about a third of
// the time (tests/gpu/README.md). wgmma is asynchronous and reads its B operand straight from
// shared memory, so a warp issues a tile's 36 products (4 k-steps x 9 slice pairs) in a few dozen
// instructions and then waits, while the other block on the multiprocessor runs its epilogue.
//
// A block is one warpgroup (128 threads) and owns one row and 64 keys at a time. The mma's M is
// the 64 keys, A from registers (each warp loads its 16 keys' slices with ldmatrix, the layout
// both mma forms share); N is the pass's 64 heads, B the row's q slices, staged once per row in
// the descriptor layout of wgmma.cuh. So thread (warp w, lane l) holds keys 16 w + l / 4 (+ 8) x
// heads 8 j + 2 (l % 4) (+ 1), j < 8: 16 heads of each of its 2 keys. It joins each dot's five
// shift classes (relu_joined), sums w' r and |w'| r over its 16 heads in two chains of 8 fused
// multiply-adds joined by one addition, then over the quad (2 levels) and over passes: a product
// meets at most 8 + 1 + 2 + passes roundings (fma_tree_error's h). The thread of lane l % 4 == 0
// decides and stores its 2 keys: no shared memory and no barrier in the epilogue.
//
// head_dim <= 128 (the row's q slices, 24 KiB, and two buffers of the keys' stay staged): the
// host keeps the mma.sync form for longer rows. Two blocks a multiprocessor (80 KiB of shared
// memory each, at most 255 registers a thread).
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/wgmma.cuh"
#include "kernels/hip/device_common.hpp"
#include "kernels/hip/exact_args.hpp"
#include "kernels/hip/exact_arith.hpp"
#include "kernels/hip/launch_check.hpp"

namespace mqa::gpu {
namespace {

using namespace exact_kernels;

constexpr int kWarpgroup = 128;
constexpr int kTileKeys = 64;  // the wgmma's M, 16 a warp
constexpr int kMaxSteps = 4;   // k-steps of 32: head_dim <= 128
constexpr int kTilesPerBlock = 8;
static_assert(kInt8Pass == 64, "a pass is the wgmma's N = 64 heads");
// A staged key row: 16 bytes of padding make it 36 words, so the 8 rows an ldmatrix phase reads
// fall in 32 different banks (as exact_tiles_int8's staging).
constexpr int kKeyRow = kMaxSteps * kMmaK + 16;
constexpr int kKeyBytes = kSlices * kTileKeys * kKeyRow;                           // one buffer
constexpr int kQBytes = kSlices * kMaxSteps * static_cast<int>(sm90::kTileBytes);  // [slice][step] tiles
constexpr int kSharedBytes = kQBytes + 2 * kKeyBytes;

template <int Steps>
__global__ __launch_bounds__(kWarpgroup, 2) void exact_tiles_wgmma(exact_args e, int8_operands s) {
  constexpr int kPieces = Steps * kMmaK / 16;             // 16-byte pieces of a staged row
  __shared__ __align__(16) double weights[kInt8Pass];     // w u_q u_k
  extern __shared__ __align__(128) std::int8_t staged[];  // q's tiles, then two buffers of k's rows
  std::int8_t* const q_tiles = staged;
  const logits_args& a = e.in;

  const int t = static_cast<int>(threadIdx.x);
  const int warp = t / 32, lane = t % 32, g = lane / 4, tg = lane % 4;
  const std::int64_t tiles = (a.n + kTileKeys - 1) / kTileKeys;
  const std::int64_t first_tile = static_cast<std::int64_t>(blockIdx.x) * kTilesPerBlock;
  const std::int64_t last_tile = first_tile + kTilesPerBlock < tiles ? first_tile + kTilesPerBlock : tiles;
  const std::int64_t passes = (a.heads + kInt8Pass - 1) / kInt8Pass;
  const double terms = static_cast<double>(passes * kInt8Pass);
  const double roundings = static_cast<double>(8 + 1 + 2 + passes);
  const std::int64_t q_plane = e.row_count * s.heads * s.dim, k_plane = a.n * s.dim;
  const bool q_kept = passes == 1;  // one pass: the row's q tiles and weights serve all its tiles
  std::int64_t q_staged_row = -1;
  int k_buffer = 0;
  bool k_prefetched = false;

  // Staging, keys and q alike: thread t copies piece t % 8 (bytes 16 (t % 8)..) of rows t / 8 +
  // 16 x, x < 12 (4 row groups of each slice); pieces past the row's kPieces, and keys past n,
  // are zeros. Only the tile's first key and the buffer change from call to call.
  constexpr int kRowGroups = kTileKeys / 16;
  const int piece = t % 8, row0 = t / 8;
  const bool piece_in_row = piece < kPieces;
  const std::int64_t row_stride = 16 * s.dim;  // bytes between a thread's rows in global memory
  auto stage_keys = [&](int buffer, std::int64_t key_first) {
    const std::int8_t* const from = s.k + (key_first + row0) * s.dim + 16 * piece;
    std::int8_t* const to = staged + kQBytes + buffer * kKeyBytes + row0 * kKeyRow + 16 * piece;
    const bool all_keys = key_first + kTileKeys <= a.n;
    for (int x = 0; x < kSlices * kRowGroups; ++x) {
      const int slice = x / kRowGroups, group = x % kRowGroups;
      const bool valid = piece_in_row && (all_keys || key_first + row0 + 16 * group < a.n);
      copy_16(to + (slice * kTileKeys + 16 * group) * kKeyRow,
              valid ? from + slice * k_plane + group * row_stride : s.k, valid);
    }
  };
  // The pass's heads into the descriptor layout: piece p of head h is bytes 16 (p % 2).. of k-step
  // p / 2's tile, one core-matrix row; heads 16 apart are 512 bytes apart there.
  auto stage_q = [&](std::int64_t r, std::int64_t h0) {
    const std::int8_t* const from = s.q + (r * s.heads + h0 + row0) * s.dim + 16 * piece;
    std::int8_t* const to = q_tiles + (piece / 2) * sm90::kTileBytes + sm90::tile_offset(row0, 16u * (piece % 2));
    for (int x = 0; x < kSlices * kRowGroups; ++x) {
      const int slice = x / kRowGroups, group = x % kRowGroups;
      copy_16(to + slice * kMaxSteps * sm90::kTileBytes + group * 512,
              piece_in_row ? from + slice * q_plane + group * row_stride : s.q, piece_in_row);
    }
  };

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
        const std::int64_t key = key0 + t;
        if (t < kTileKeys && key < a.n) {  // a special row's in-window values come from the CPU
          const bool inside = key >= w.begin && key < w.end;
          e.logits[r * a.n + key] = inside ? 0.0f : negative_infinity();
          e.undecided[r * a.n + key] = 0;
        }
        continue;  // uniform over the block
      }
      dot2 total[2];  // keys 16 warp + g + 8 y: the head sum over the passes so far (error stays 0)
      for (std::int64_t h0 = 0; h0 < a.heads; h0 += kInt8Pass) {
        if (!q_kept || q_staged_row != r) {
          // Every warp has waited for its products of the q tiles staged before, and read the
          // weights: its epilogue came before this barrier.
          __syncthreads();
          if (t < kInt8Pass)
            weights[t] = h0 + t < a.heads ? mul_rn(static_cast<double>(a.weights[i * a.heads + h0 + t]), s.unit) : 0.0;
          stage_q(r, h0);
          q_staged_row = r;
        }
        const int current = k_buffer;
        if (!k_prefetched) stage_keys(current, key0);
        copies_done();
        sm90::fence_shared_for_wgmma();  // cp.async wrote them; the tensor cores read them
        __syncthreads();
        // The other buffer was last read (by ldmatrix, synchronously) in the tile before, which
        // every warp finished before the barrier above: the next tile's keys go there now.
        k_prefetched = q_kept && tile_index + 1 < last_tile && reached(key0 + kTileKeys);
        if (k_prefetched) {
          k_buffer ^= 1;
          stage_keys(k_buffer, key0 + kTileKeys);
        }
        // This warp's 16 keys, a k-step's three slices at a time: rows 16 warp + l % 16, bytes 16
        // (l / 16).. Two sets of fragments alternate: a set is reloaded only once the products
        // reading it are done (wait_pending), so at most two k-steps are queued on the tensor cores.
        const std::int8_t* const k_rows =
            staged + kQBytes + current * kKeyBytes + (16 * warp + lane % 16) * kKeyRow + 16 * (lane / 16);
        std::uint32_t ka[2][kSlices][4];
        // c[shift]: the slice pairs (qs, ks) with qs + ks = shift, summed over head_dim. A class's
        // first product (step 0, the smallest qs) overwrites it.
        std::int32_t c[kShifts][32];
        for (int step = 0; step < Steps; ++step) {
          if (step >= 2) sm90::wait_pending<1>();
          std::uint32_t(&f)[kSlices][4] = ka[step % 2];
          for (int slice = 0; slice < kSlices; ++slice)
            load_matrices(f[slice], k_rows + slice * kTileKeys * kKeyRow + step * kMmaK);
          sm90::fence();
          for (int qs = 0; qs < kSlices; ++qs) {
            const std::uint64_t b = sm90::descriptor(q_tiles + (qs * kMaxSteps + step) * sm90::kTileBytes);
            for (int ks = 0; ks < kSlices; ++ks) {
              if (step == 0 && (qs == 0 || ks == kSlices - 1))
                sm90::mma_m64n64k32_s8<false>(c[qs + ks], f[ks], b);
              else
                sm90::mma_m64n64k32_s8<true>(c[qs + ks], f[ks], b);
            }
          }
          sm90::commit();
        }
        sm90::wait_all();
        // c[.][4 j + 2 y + x]: key 16 warp + g + 8 y, head 8 j + 2 tg + x of the pass.
        for (int y = 0; y < 2; ++y) {
          double sum[2] = {0, 0}, magnitude[2] = {0, 0};  // heads j < 4, j >= 4
          for (int j = 0; j < 8; ++j) {
            const double2 w2 = *reinterpret_cast<const double2*>(&weights[8 * j + 2 * tg]);
            for (int x = 0; x < 2; ++x) {
              const int at = 4 * j + 2 * y + x;
              const double dot = relu_joined(c[0][at], c[1][at], c[2][at], c[3][at], c[4][at]);
              const double weight = x ? w2.y : w2.x;
              sum[j / 4] = fma(weight, dot, sum[j / 4]);
              magnitude[j / 4] = fma(fabs(weight), dot, magnitude[j / 4]);
            }
          }
          total[y].sum = add_rn(total[y].sum, sum_over_quad(add_rn(sum[0], sum[1])));
          total[y].magnitude = add_rn(total[y].magnitude, sum_over_quad(add_rn(magnitude[0], magnitude[1])));
        }
      }
      if (tg == 0)
        for (int y = 0; y < 2; ++y) {
          const std::int64_t key = key0 + 16 * warp + g + 8 * y;
          if (key >= a.n) continue;
          const std::int64_t at = r * a.n + key;
          if (key < w.begin || key >= w.end) {
            e.logits[at] = negative_infinity();
            e.undecided[at] = 0;
          } else {
            const decision d = decide(total[y], a.k_scale[key], terms, fma_tree_error(roundings));
            const bool open = d.undecided || e.key_special[key] != 0;
            e.logits[at] = d.value;
            e.undecided[at] = open;
            if (open) atomicAdd(&e.undecided_count[r], 1u);
          }
        }
    }
  }
}

template <int Steps>
void launch(const exact_args& e, const int8_operands& s) {
  auto kernel = exact_tiles_wgmma<Steps>;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes),
        "exact_tiles_wgmma shared memory");
  const std::int64_t tiles = (e.in.n + kTileKeys - 1) / kTileKeys;
  const dim3 grid(static_cast<unsigned>((tiles + kTilesPerBlock - 1) / kTilesPerBlock), grid_rows(e.row_count));
  kernel<<<grid, kWarpgroup, kSharedBytes>>>(e, s);
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
