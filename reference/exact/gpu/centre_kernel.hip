// A modelled contract's centre on the GPU (exact::options::dot_model): every dot is the matrix
// instruction's, as model_step.hpp computes it from the codes, and everything after the dots is
// the exact reference's: the head sum and scaling by Dot2 with the float32 decision of
// exact_arith.hpp (exact_kernel.hip's opening comment is the proof; a thread's chain over heads is
// one shape of its tree), elements it cannot certify left to the CPU. The magnitude is the model's
// (reference/exact/logits.hpp): |k_scale| sum_h |w_h| relu(x'_h) over the model's dots x', summed
// over heads in ascending order and rounded up exactly as reference/exact/compute.cpp does, so its
// bits are the CPU's too.
//
// A block owns 128 consecutive keys, a thread each, and takes the rows given to it in turn. The
// keys' operands are decomposed once into shared memory ([d][key], 2 bytes each: 32 threads read 64
// consecutive bytes); each head's q row is decomposed into shared memory before the threads walk
// its dot. Non-finite codes stand as 0 there: their elements go to the CPU (key_special,
// row_special), as in the exact engines.
#include <cstdint>

#include "reference/exact/gpu/exact_args.hpp"
#include "reference/exact/gpu/exact_arith.hpp"
#include "reference/exact/gpu/exact_device.hpp"
#include "reference/exact/gpu/model_step.hpp"
#include "reference/gpu/device_common.hpp"
#include "reference/gpu/launch_check.hpp"

#if defined(__HIP__)
#pragma clang fp contract(off)
#endif

namespace mqa::gpu {
namespace {

using namespace exact_kernels;

constexpr int kCentreKeys = 128;

// An operand in two bytes: m (|m| < 16) and e (an fp8 exponent, |e| < 32).
struct packed_operand {
  std::int8_t m, e;
};

__device__ inline packed_operand pack(const code_format& f, std::uint8_t code) {
  if (code_is_nonfinite(f, code)) return {0, 0};
  const model::operand o = model::operand_of(f, code);
  return {static_cast<std::int8_t>(o.m), static_cast<std::int8_t>(o.e)};
}

// The products of the staged q row with this thread's key.
struct staged_products {
  const packed_operand* q;    // [d]
  const packed_operand* key;  // [d][kCentreKeys], at this thread's column
  __device__ model::product operator()(int d) const {
    const packed_operand a = q[d], b = key[d * kCentreKeys];
    return {static_cast<std::int32_t>(a.m) * b.m, static_cast<std::int32_t>(a.e) + b.e};
  }
};

__global__ __launch_bounds__(kCentreKeys) void centre_tiles(exact_args e, model::chain_rule rule) {
  extern __shared__ packed_operand staged[];  // keys [head_dim][kCentreKeys], then one q row [head_dim]
  const logits_args& a = e.in;
  const int t = static_cast<int>(threadIdx.x);
  const int dim = static_cast<int>(a.head_dim);
  packed_operand* keys = staged;
  packed_operand* q_row = staged + static_cast<std::size_t>(dim) * kCentreKeys;
  const std::int64_t key0 = static_cast<std::int64_t>(blockIdx.x) * kCentreKeys;
  const std::int64_t key = key0 + t;
  // Consecutive threads read consecutive bytes of a key row.
  for (int x = t; x < dim * kCentreKeys; x += kCentreKeys) {
    const int j = x / dim, d = x % dim;
    const std::int64_t column = key0 + j;
    keys[d * kCentreKeys + j] = column < a.n ? pack(a.k_format, a.k[column * a.head_dim + d]) : packed_operand{0, 0};
  }
  const staged_products products{q_row, keys + t};
  const double heads = static_cast<double>(a.heads);
  const double magnitude_factor = 1.0 + static_cast<double>(a.heads + 3) * 0x1p-52;
  for (std::int64_t r = blockIdx.y; r < e.row_count; r += gridDim.y) {
    const std::int64_t i = e.rows[r];
    const key_window w = clamped_window(a.ks[i], a.ke[i], a.n);
    const std::int64_t at = r * a.n + key;
    const bool inside = key >= w.begin && key < w.end;
    if (w.end <= key0 || w.begin >= key0 + kCentreKeys || w.end <= w.begin || e.row_special[r] != 0) {
      if (key < a.n) {  // a special row's in-window values come from the CPU
        e.logits[at] = inside ? 0.0f : negative_infinity();
        e.magnitude[at] = 0;
        e.undecided[at] = 0;
      }
      continue;  // uniform over the block
    }
    dot2 total;
    double magnitude = 0;  // sum_h |w_h| x'_h over the heads whose model dot x'_h is positive
    for (std::int64_t h = 0; h < a.heads; ++h) {
      __syncthreads();  // the previous head's row is read by every thread
      const std::uint8_t* q = a.q + (i * a.heads + h) * a.head_dim;
      for (int d = t; d < dim; d += kCentreKeys) q_row[d] = pack(a.q_format, q[d]);
      __syncthreads();
      if (!inside) continue;
      const float x = model::modelled_dot(rule, dim, products);
      const double weight = static_cast<double>(a.weights[i * a.heads + h]);
      add_term(total, weight, x > 0.0f ? static_cast<double>(x) : 0.0);
      if (x > 0.0f) magnitude = add_rn(magnitude, mul_rn(fabs(weight), static_cast<double>(x)));
    }
    if (key >= a.n) continue;
    if (!inside) {
      e.logits[at] = negative_infinity();
      e.magnitude[at] = 0;
      e.undecided[at] = 0;
      continue;
    }
    const double c = a.k_scale[key];
    const decision y = decide(total, c, heads, dot2_error(heads));
    const bool open = y.undecided || e.key_special[key] != 0;
    e.logits[at] = y.value;
    e.magnitude[at] = mul_rn(mul_rn(fabs(c), magnitude), magnitude_factor);
    e.undecided[at] = open;
    if (open) atomicAdd(&e.undecided_count[r], 1u);
  }
}

std::size_t staged_bytes(std::int64_t head_dim) {
  return static_cast<std::size_t>(head_dim) * (kCentreKeys + 1) * sizeof(packed_operand);
}

}  // namespace

const char* centre_unsupported(std::int64_t head_dim) {
  int device = 0, limit = 0;
  if (hipGetDevice(&device) != hipSuccess) return "no GPU device";
#if defined(__CUDACC__)
  if (cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
    return "the device's shared memory is unknown";
#else
  hipDeviceProp_t prop{};
  if (hipGetDeviceProperties(&prop, device) != hipSuccess) return "the device's shared memory is unknown";
  limit = static_cast<int>(prop.sharedMemPerBlock);
#endif
  if (staged_bytes(head_dim) > static_cast<std::size_t>(limit))
    return "head_dim too large for the model's operands in shared memory (129 x head_dim x 2 bytes: 128 keys and a q row)";
  return nullptr;
}

void launch_centre_tiles(const exact_args& e, const model::chain_rule& rule) {
  const std::size_t bytes = staged_bytes(e.in.head_dim);
#if defined(__CUDACC__)
  check(cudaFuncSetAttribute(centre_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
        "centre_tiles shared memory");
#endif
  const dim3 grid(static_cast<unsigned>((e.in.n + kCentreKeys - 1) / kCentreKeys), grid_rows(e.row_count));
  centre_tiles<<<grid, kCentreKeys, bytes>>>(e, rule);
  check_launch("centre_tiles");
}

}  // namespace mqa::gpu
