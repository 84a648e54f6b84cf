// Hopper's fp8 warpgroup MMA (wgmma.mma_async, sm_90a) as device functions: shared-memory matrix
// descriptors for K-major operands without swizzle, the operand tile layout they describe,
// m64n64k32 f32 += fp8 x fp8 for the four e4m3/e5m2 pairs, and m64n32k32 s32 += s8 x s8 with A
// in registers (the exact reference's integer engine, reference/exact/gpu/exact_wgmma.cu). Only nvcc
// with -gencode=arch=compute_90a,code=sm_90a compiles this (mqa_cuda_sm90, mqa_exact_sm90); read the
// PTX ISA's "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" chapter (matrix descriptor
// format, core matrices of 8 rows x 16 bytes, accumulator fragment layout).
#pragma once

#include <cstdint>

namespace mqa::gpu::sm90 {

enum class fp8_type { e4m3, e5m2 };

// One k-step's operand tile: 64 rows (heads of q, or keys) x 32 fp8 elements, as 8 x 2 core
// matrices of 8 rows x 16 bytes. Core (row / 8, k / 16) starts at (row / 8) * 256 + (k / 16) * 128:
// 128 bytes between cores adjacent in K (the leading byte offset), 256 between cores adjacent in
// rows (the stride byte offset).
inline constexpr unsigned kTileBytes = 64 * 32;
__host__ __device__ constexpr unsigned tile_offset(unsigned row, unsigned k) {
  return (row / 8) * 256 + (k / 16) * 128 + (row % 8) * 16 + (k % 16);
}

// Matrix descriptor (no swizzle): start address, leading and stride byte offsets, each >> 4.
__device__ inline std::uint64_t descriptor(const void* tile) {
  const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
  return static_cast<std::uint64_t>((address & 0x3FFFF) >> 4) | (static_cast<std::uint64_t>(128 >> 4) << 16) |
         (static_cast<std::uint64_t>(256 >> 4) << 32);
}

// Shared memory written by ordinary stores is read by the tensor cores through the async proxy:
// every writing thread fences before the barrier that precedes the first wgmma.
__device__ inline void fence_shared_for_wgmma() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ inline void wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Waits until at most Pending of this warp's committed groups are still running.
template <int Pending>
__device__ inline void wait_pending() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

// d += A . B^T over one k-step of 32: A a 64 x 32 tile (rows i), B a 64 x 32 tile (columns n),
// both as tile_offset lays them out. The accumulator fragment of thread t (warp w = t / 32, lane
// l = t % 32): d[4 j + 2 r + c] holds (row w * 16 + l / 4 + 8 r, column 8 j + 2 (l % 4) + c).
template <fp8_type A, fp8_type B>
__device__ void mma_m64n64k32(float (&d)[32], std::uint64_t a, std::uint64_t b);

__device__ inline int fragment_row(int i) { return static_cast<int>(threadIdx.x / 32) * 16 + static_cast<int>(threadIdx.x % 32) / 4 + 8 * ((i / 2) % 2); }
__device__ inline int fragment_column(int i) { return 8 * (i / 4) + 2 * static_cast<int>(threadIdx.x % 4) + i % 2; }

template <>
__device__ inline void mma_m64n64k32<fp8_type::e4m3, fp8_type::e4m3>(float (&d)[32], std::uint64_t a, std::uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(1));
}

template <>
__device__ inline void mma_m64n64k32<fp8_type::e4m3, fp8_type::e5m2>(float (&d)[32], std::uint64_t a, std::uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(1));
}

template <>
__device__ inline void mma_m64n64k32<fp8_type::e5m2, fp8_type::e4m3>(float (&d)[32], std::uint64_t a, std::uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(1));
}

template <>
__device__ inline void mma_m64n64k32<fp8_type::e5m2, fp8_type::e5m2>(float (&d)[32], std::uint64_t a, std::uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(1));
}

// d += A . B^T over one k-step of 32 in exact int32 arithmetic, s8 x s8 -> s32, n32: A is 64 x 32
// in registers, warp w holding rows 16 w.. as four 32-bit words in mma.m16n8k32's A layout (a[0]:
// row l / 4, bytes 4 (l % 4)..; a[1]: row + 8; a[2], a[3]: the same at byte 16 +), B 32 rows
// (columns n) of a 64 x 32 tile as tile_offset lays it out, from a descriptor at any 8-row
// boundary. The accumulator fragment is fragment_row / fragment_column's for columns below 32:
// d[4 j + 2 r + c], j < 4. d = A . B^T when Accumulate is false: the old d is neither read nor
// needed, so no instruction zeroes it between the fence and the mma, which would make ptxas wait
// for the tensor cores there. a and d must stay untouched until a wait covers this instruction
// (PTX ISA: wgmma.mma_async).
template <bool Accumulate>
__device__ inline void mma_m64n32k32_s8(std::int32_t (&d)[16], const std::uint32_t (&a)[4], std::uint64_t b) {
  if constexpr (Accumulate)
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, 1;\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),
          "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
  else
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, 0;\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]), "=r"(d[8]),
          "=r"(d[9]), "=r"(d[10]), "=r"(d[11]), "=r"(d[12]), "=r"(d[13]), "=r"(d[14]), "=r"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

}  // namespace mqa::gpu::sm90
