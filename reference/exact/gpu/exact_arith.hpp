// Device arithmetic both exact-reference kernels share (exact_kernel.hip, and the Hopper wgmma
// form of the integer engine in exact_wgmma.cu): float64 operations rounded exactly
// as written, the Dot2 nodes, the float32 decision with its error bounds, and the integer
// engine's primitives (fragment loads, asynchronous copies, the join of its shift classes).
// exact_kernel.hip's opening comment is the proof these pieces serve.
//
// Arithmetic here must round exactly as written: a contracted w * r + s would break TwoSum. The
// _rn intrinsics on CUDA are never contracted; HIP gets plain operators under
// `#pragma clang fp contract(off)`, and the build passes -fmad=false / -ffp-contract=off too.
#pragma once

#include <cstdint>

#include "reference/gpu/hip_compat.hpp"
#include "reference/gpu/operation.hpp"

#if defined(__HIP__)
#pragma clang fp contract(off)
#endif

namespace mqa::gpu::exact_kernels {

#if defined(__HIP__)
__device__ inline double add_rn(double a, double b) { return a + b; }
__device__ inline double sub_rn(double a, double b) { return a - b; }
__device__ inline double mul_rn(double a, double b) { return a * b; }
#else
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
#endif

// s + sigma + (error terms) with P = sum |p| alongside: one node of the Dot2 tree.
struct dot2 {
  double sum = 0, error = 0, magnitude = 0;
};

// TwoSum: s + b = s' + q exactly.
__device__ inline void two_sum(double a, double b, double& s, double& q) {
  s = add_rn(a, b);
  const double bb = sub_rn(s, a);
  q = add_rn(sub_rn(a, sub_rn(s, bb)), sub_rn(b, bb));
}

// Adds the term w * r: TwoProduct (fma gives the exact error), TwoSum into the running sum.
__device__ inline void add_term(dot2& acc, double w, double r) {
  const double p = mul_rn(w, r);
  const double e = fma(w, r, -p);
  double s, q;
  two_sum(acc.sum, p, s, q);
  acc.sum = s;
  acc.error = add_rn(acc.error, add_rn(q, e));
  acc.magnitude = add_rn(acc.magnitude, fabs(p));
}

// Joins two subtrees: TwoSum of their sums, their error sums and magnitudes added.
__device__ inline void join(dot2& acc, const dot2& other) {
  double s, q;
  two_sum(acc.sum, other.sum, s, q);
  acc.sum = s;
  acc.error = add_rn(add_rn(acc.error, other.error), q);
  acc.magnitude = add_rn(acc.magnitude, other.magnitude);
}

struct decision {
  float value;
  bool undecided;
};

// reference/exact/head_sum.cpp's decision, unchanged: v = c (s + sigma), B = 2 (|c| k P + 2^-50
// |v|), certified when [v - B, v + B] rounds to one float32 and a zero's sign is known. k bounds
// |T - (s + sigma)| / P for the way s was summed: dot2_error or fma_tree_error. terms counts the
// products (2^33 at most: the head-sum proofs assume m u well below 1).
__device__ inline decision decide(const dot2& acc, double c, double terms, double k) {
  const bool certifiable = terms <= 0x1p33;
  const double v = mul_rn(c, add_rn(acc.sum, acc.error));
  const double bound = 2.0 * (fabs(c) * (k * acc.magnitude) + 0x1p-50 * fabs(v));
  const double lo = sub_rn(v, bound), hi = add_rn(v, bound);
  const float y_lo = static_cast<float>(lo), y_hi = static_cast<float>(hi);
  const bool same = y_lo == y_hi;
  const bool zero_sign_known = y_lo != 0.0f || lo > 0 || hi < 0 || (lo == 0 && hi == 0);
  return {y_lo != 0.0f ? y_lo : (hi < 0 ? -0.0f : 0.0f), !(certifiable && same && zero_sign_known)};
}

// The factor that lifts a float64 sum of the magnitude's nonnegative terms, in any order, above
// the exact A (reference/exact/magnitude.hpp's allowance: heads + head_dim + 3 roundings).
__device__ inline double magnitude_allowance(const logits_args& a) {
  return 1.0 + static_cast<double>(a.heads + a.head_dim + 3) * 0x1p-52;
}

// Dot2 (step 2 above): 4 m (m + 1) u^2.
__device__ inline double dot2_error(double terms) { return 4.0 * terms * (terms + 1.0) * 0x1p-106; }

// Products p_k = w_k r_k summed by a tree of fused multiply-adds fl(w r + s) and additions
// (exact_tiles_int8), with P' the same tree's float sum of |w_k| r_k. If each p_k meets at most h
// roundings on its way to the root (its own fma and the operations above it), |s - T| <= gamma_h
// P (Higham, Accuracy and Stability, 2nd ed., 3.1 and 4.2: the bound counts the roundings a term
// goes through, whatever the tree's shape; an fma's single rounding only removes one), gamma_h =
// h u / (1 - h u); the nonnegative tree gives P' >= (1 - u)^h P >= (1 - gamma_h) P. Hence |s - T|
// <= gamma_h / (1 - gamma_h) P' <= 2 h u P' while h u <= 1/4; sigma = 0. Every p_k is a multiple
// of 2^-149 u_q u_k >= 2^-175 (a float32 weight times the units times an integer), and so is every
// rounded partial sum: nothing underflows, relative bounds hold. Each kernel that sums this way
// counts its own h where it calls this (exact_tiles_int8, exact_tiles_wgmma).
__device__ inline double fma_tree_error(double height) { return height * 0x1p-52; }

// ---- The integer engine's primitives (NVIDIA, compute capability >= 8.0) ----

// Four 8 x 16-byte matrices from shared memory: lane l names row l % 8 of matrix l / 8 and
// receives, from each matrix x, the 4 bytes at row l / 4, bytes 4 (l % 4).. into m[x]. With rows
// (keys or heads) 0-7 / 8-15 and bytes 0-15 / 16-31 as the four matrices this is exactly the
// A fragment of mma.m16n8k32 (and a warp's 16 rows of wgmma's register A operand: the PTX ISA
// gives both the same layout); with two 8-row groups at bytes 0-15 and 16-31, two B fragments.
__device__ inline void load_matrices(std::uint32_t (&m)[4], const std::int8_t* row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(m[0]), "=r"(m[1]), "=r"(m[2]), "=r"(m[3])
               : "r"(address));
#else
  (void)m, (void)row;
  __builtin_trap();
#endif
}

// 16 bytes from global to shared memory, or 16 zero bytes where `valid` is false, without a trip
// through registers: cp.async (compute capability 8.0) keeps every copy of a stage in flight at
// once, where a load then a store per piece waited out the global latency once per piece (Nsight
// Compute found a third of the kernel's stall samples on those stores; docs/measurements.md).
// copies_done waits for them all. (HIP builds compile the plain copy; they never launch this.)
__device__ inline void copy_16(std::int8_t* to, const std::int8_t* from, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(from), "r"(valid ? 16 : 0)
               : "memory");
#else
  *reinterpret_cast<uint4*>(to) = valid ? *reinterpret_cast<const uint4*>(from) : uint4{0, 0, 0, 0};
#endif
}

__device__ inline void copies_done() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// v summed over the 4 lanes of a quad (lanes 4 (lane / 4) ..), in all of them: a tree of two
// levels. (HIP builds compile a trap: the integer engine never runs there.)
__device__ inline double sum_over_quad(double v) {
#if defined(__CUDA_ARCH__)
  v = add_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return add_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
#else
  (void)v;
  __builtin_trap();
#endif
}

// relu of the exact dot sum_s c_s 2^(7 s), as a float64 integer. c_0 + 2^7 c_1 and c_2 + 2^7 c_3
// are joined in int32 (|c_s| <= (slice pairs of the class) 127^2 head_dim keeps them below 2^31
// for head_dim <= 512), the rest in int64 (two wide multiply-adds); relu zeroes a dot whose high
// word is negative. Then 0 <= dot < 2^51 (values below 2^21 units, head_dim <= 512), so 1.5 *
// 2^52's bits plus dot are the bits of the float64 1.5 * 2^52 + dot, exactly (the low word of
// those bits is 0: one add to the high word), and subtracting 1.5 * 2^52 is exact.
__device__ inline double relu_joined(std::int32_t c0, std::int32_t c1, std::int32_t c2, std::int32_t c3,
                                     std::int32_t c4) {
  constexpr long long kBias = 0x4338000000000000LL;  // the bits of 1.5 * 2^52
  const std::int32_t low = c0 + c1 * 128, middle = c2 + c3 * 128;
  const long long dot =
      static_cast<long long>(low) + static_cast<long long>(middle) * 16384 + static_cast<long long>(c4) * 268435456;
  const int high = static_cast<int>(dot >> 32);  // negative exactly when dot is
  const bool negative = high < 0;
  const double biased =
      __hiloint2double(negative ? static_cast<int>(kBias >> 32) : high + static_cast<int>(kBias >> 32),
                       negative ? 0 : static_cast<int>(dot));
  return sub_rn(biased, 0x1.8p52);
}

}  // namespace mqa::gpu::exact_kernels
