// A modelled contract's centre on the GPU (exact::options::dot_model): every dot is the matrix
// instruction's, as model_step.hpp computes it from the codes, and everything after the dots is
// the exact reference's: the head sum and scaling by Dot2 with the float32 decision of
// exact_arith.hpp (exact_kernel.hip's opening comment is the proof; a thread's chain over heads is
// one shape of its tree), elements it cannot certify left to the CPU. The magnitude is the model's
// (reference/exact/logits.hpp): |k_scale| sum_h |w_h| relu(x'_h) over the model's dots x', summed
// over heads in ascending order and rounded up exactly as reference/exact/compute.cpp does, so its
// bits are the CPU's too.
//
// A block owns 128 consecutive keys, a thread each, and takes the rows given to it in turn. Two
// forms of the dots:
// - centre_truncating, for a chain of 32-product steps whose terms and result are truncated
//   (truncating_step.hpp: float32 arithmetic, exact). It walks a row step by step: the step's q
//   operands of every head are staged in shared memory, the thread's key operands for the step
//   (its 32 codes read from global memory, decoded through a table) sit in registers and serve
//   every head, and each head's chain (and promoted sum) waits in shared memory for the next step.
//   The heads' terms are added in ascending order at the last step, as the generic form adds them.
// - centre_tiles, every other instruction: the keys' operands are decomposed once into shared
//   memory ([d][key], 2 bytes each: 32 threads read 64 consecutive bytes); each head's q row is
//   decomposed into shared memory before the threads walk its dot with the generic integer step.
// Non-finite codes stand as 0 in both: their elements go to the CPU (key_special, row_special), as
// in the exact engines.
#include <cstdint>

#include "reference/exact/gpu/exact_args.hpp"
#include "reference/exact/gpu/exact_arith.hpp"
#include "reference/exact/gpu/exact_device.hpp"
#include "reference/exact/gpu/model_step.hpp"
#include "reference/exact/gpu/truncating_step.hpp"
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

// A row as a block's thread sees it.
struct row_in_tile {
  std::int64_t r = 0, i = 0;  // position in e.rows, and the problem's row
  std::int64_t at = 0;        // this thread's element
  bool inside = false;        // this thread's key is in the row's window
  bool skipped = false;       // nothing to compute in the block (uniform over it): the window misses
                              // its keys or is empty, or the row is special
};

__device__ inline row_in_tile row_in(const exact_args& e, std::int64_t r, std::int64_t key0, std::int64_t key) {
  const logits_args& a = e.in;
  row_in_tile row;
  row.r = r;
  row.i = e.rows[r];
  const key_window w = clamped_window(a.ks[row.i], a.ke[row.i], a.n);
  row.at = r * a.n + key;
  row.inside = key >= w.begin && key < w.end;
  row.skipped = w.end <= key0 || w.begin >= key0 + kCentreKeys || w.end <= w.begin || e.row_special[r] != 0;
  return row;
}

// An element not computed here: -inf outside the window; in a special row's window the CPU's value
// replaces it.
__device__ inline void store_uncomputed(const exact_args& e, const row_in_tile& row, std::int64_t key) {
  if (key >= e.in.n) return;
  e.logits[row.at] = row.inside ? 0.0f : negative_infinity();
  e.magnitude[row.at] = 0;
  e.undecided[row.at] = 0;
}

// A head's modelled dot x into the row's sum and magnitude (sum_h |w_h| x over positive x).
__device__ inline void add_head(const logits_args& a, const row_in_tile& row, std::int64_t h, float x, dot2& total,
                                double& magnitude) {
  const double weight = static_cast<double>(a.weights[row.i * a.heads + h]);
  add_term(total, weight, x > 0.0f ? static_cast<double>(x) : 0.0);
  if (x > 0.0f) magnitude = add_rn(magnitude, mul_rn(fabs(weight), static_cast<double>(x)));
}

// An in-window element from its heads' sum and magnitude.
__device__ inline void store_element(const exact_args& e, const row_in_tile& row, std::int64_t key, const dot2& total,
                                     double magnitude) {
  const logits_args& a = e.in;
  const double heads = static_cast<double>(a.heads);
  const double magnitude_factor = 1.0 + static_cast<double>(a.heads + 3) * 0x1p-52;
  const double c = a.k_scale[key];
  const decision y = decide(total, c, heads, dot2_error(heads));
  const bool open = y.undecided || e.key_special[key] != 0;
  e.logits[row.at] = y.value;
  e.magnitude[row.at] = mul_rn(mul_rn(fabs(c), magnitude), magnitude_factor);
  e.undecided[row.at] = open;
  if (open) atomicAdd(&e.undecided_count[row.r], 1u);
}

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
  for (std::int64_t r = blockIdx.y; r < e.row_count; r += gridDim.y) {
    const row_in_tile row = row_in(e, r, key0, key);
    if (row.skipped) {
      store_uncomputed(e, row, key);
      continue;  // uniform over the block
    }
    dot2 total;
    double magnitude = 0;
    for (std::int64_t h = 0; h < a.heads; ++h) {
      __syncthreads();  // the previous head's row is read by every thread
      const std::uint8_t* q = a.q + (row.i * a.heads + h) * a.head_dim;
      for (int d = t; d < dim; d += kCentreKeys) q_row[d] = pack(a.q_format, q[d]);
      __syncthreads();
      if (row.inside) add_head(a, row, h, model::modelled_dot(rule, dim, products), total, magnitude);
    }
    if (row.inside && key < a.n) {
      store_element(e, row, key, total, magnitude);
    } else {
      store_uncomputed(e, row, key);
    }
  }
}

constexpr int kStep = model::kTruncatingProducts;
constexpr std::int64_t kTruncatingRows = 8;

// centre_truncating's shared memory, in bytes from its start.
struct truncating_layout {
  std::size_t q = 0;         // step_operands [heads]: the step's q operands
  std::size_t tables = 0;    // scaled_operand [2][256]: q's codes, then k's
  std::size_t chain = 0;     // float [heads][kCentreKeys]: each head's chain so far
  std::size_t promoted = 0;  // float [heads][kCentreKeys], with promotion: each head's promoted sum
  std::size_t total = 0;
};

MQA_HOST_DEVICE inline truncating_layout truncating_layout_of(std::int64_t heads, bool promotion) {
  const auto h = static_cast<std::size_t>(heads);
  truncating_layout l;
  l.tables = l.q + h * sizeof(model::step_operands);
  l.chain = l.tables + 2 * 256 * sizeof(model::scaled_operand);
  l.promoted = l.chain + h * kCentreKeys * sizeof(float);
  l.total = l.promoted + (promotion ? h * kCentreKeys * sizeof(float) : 0);
  return l;
}

__global__ __launch_bounds__(kCentreKeys) void centre_truncating(exact_args e, model::chain_rule rule,
                                                                 model::truncating_constants constants) {
  extern __shared__ float4 shared_words[];
  auto* base = reinterpret_cast<unsigned char*>(shared_words);
  const logits_args& a = e.in;
  const int t = static_cast<int>(threadIdx.x);
  const int dim = static_cast<int>(a.head_dim);
  const int heads = static_cast<int>(a.heads);
  const bool promotion = rule.promote_every > 0;
  const truncating_layout l = truncating_layout_of(a.heads, promotion);
  auto* q_step = reinterpret_cast<model::step_operands*>(base + l.q);
  auto* q_table = reinterpret_cast<model::scaled_operand*>(base + l.tables);
  model::scaled_operand* k_table = q_table + 256;
  auto* chain = reinterpret_cast<float*>(base + l.chain);
  auto* promoted = reinterpret_cast<float*>(base + l.promoted);
  const std::int64_t key0 = static_cast<std::int64_t>(blockIdx.x) * kCentreKeys;
  const std::int64_t key = key0 + t;
  // This thread's key row (16-byte aligned: the launcher checks), read 32 codes a step from
  // global memory (a block's rows read it again from the caches).
  const auto* my_key = key < a.n ? reinterpret_cast<const uint4*>(a.k + key * a.head_dim) : nullptr;

  bool staged = false;
  for (std::int64_t r = blockIdx.y; r < e.row_count; r += gridDim.y) {
    const row_in_tile row = row_in(e, r, key0, key);
    if (row.skipped) {
      store_uncomputed(e, row, key);
      continue;  // uniform over the block
    }
    if (!staged) {  // at the block's first row that reaches its keys (about half never do, causal)
      for (int c = t; c < 256; c += kCentreKeys) {
        q_table[c] = model::scaled_operand_of(a.q_format, static_cast<std::uint8_t>(c));
        q_table[c].value *= exact_power_of_two(-model::kQPrescale);  // exact: normal (truncating_step.hpp)
        k_table[c] = model::scaled_operand_of(a.k_format, static_cast<std::uint8_t>(c));
      }
      staged = true;  // made visible by the first step's barrier
    }
    dot2 total;
    double magnitude = 0;
    const std::uint8_t* q_row = a.q + row.i * a.heads * a.head_dim;
    for (int s = 0; s < dim; s += kStep) {
      __syncthreads();  // the previous step's q operands are read by every thread (first: the staging)
      for (int x = t; x < heads * (kStep / 2); x += kCentreKeys) {
        const int h = x / (kStep / 2), j = x % (kStep / 2);
        const model::scaled_operand first = q_table[q_row[h * dim + s + 2 * j]];
        const model::scaled_operand second = q_table[q_row[h * dim + s + 2 * j + 1]];
        q_step[h].value[2 * j] = first.value;
        q_step[h].value[2 * j + 1] = second.value;
        q_step[h].scale[j] = model::scale_pair_of(first.scale, second.scale);
      }
      __syncthreads();
      if (!row.inside) continue;
      // Past the last key (outside every window, so never here) there is no row to read.
      const uint4 low = my_key[s / 16], high = my_key[s / 16 + 1];
      const std::uint32_t words[8] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
      model::step_operands k;
#pragma unroll
      for (int j = 0; j < kStep / 2; ++j) {
        const std::uint32_t word = words[j / 2];
        const int shift = 16 * (j % 2);
        const model::scaled_operand first = k_table[(word >> shift) & 0xFF], second = k_table[(word >> (shift + 8)) & 0xFF];
        k.value[2 * j] = first.value;
        k.value[2 * j + 1] = second.value;
        k.scale[j] = model::scale_pair_of(first.scale, second.scale);
      }
      const bool last = s + kStep == dim;
      const bool promote = promotion && (s + kStep) % rule.promote_every == 0;
      for (int h = 0; h < heads; ++h) {
        float* chain_h = chain + h * kCentreKeys + t;
        float x = model::truncating_step(constants, s == 0 ? 0.0f : *chain_h, q_step[h], k);
        if (promotion) {
          float* promoted_h = promoted + h * kCentreKeys + t;
          float sum = s == 0 ? 0.0f : *promoted_h;
          if (promote) {
            sum = __fadd_rn(sum, x);  // model::modelled_dot's float32 addition
            x = 0.0f;
          }
          if (last) {
            x = sum;
          } else {
            *promoted_h = sum;
          }
        }
        if (last) {
          add_head(a, row, h, x, total, magnitude);
        } else {
          *chain_h = x;
        }
      }
    }
    if (row.inside && key < a.n) {
      store_element(e, row, key, total, magnitude);
    } else {
      store_uncomputed(e, row, key);
    }
  }
}

std::size_t staged_bytes(std::int64_t head_dim) {
  return static_cast<std::size_t>(head_dim) * (kCentreKeys + 1) * sizeof(packed_operand);
}

// The most dynamic shared memory a block of this device may have, or 0 where it is unknown.
int shared_limit() {
  int device = 0, limit = 0;
  if (hipGetDevice(&device) != hipSuccess) return 0;
#if defined(__CUDACC__)
  if (cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) return 0;
#else
  hipDeviceProp_t prop{};
  if (hipGetDeviceProperties(&prop, device) != hipSuccess) return 0;
  limit = static_cast<int>(prop.sharedMemPerBlock);
#endif
  return limit;
}

}  // namespace

const char* centre_unsupported(std::int64_t head_dim) {
  if (int device = 0; hipGetDevice(&device) != hipSuccess) return "no GPU device";
  const int limit = shared_limit();
  if (limit == 0) return "the device's shared memory is unknown";
  if (staged_bytes(head_dim) > static_cast<std::size_t>(limit))
    return "head_dim too large for the model's operands in shared memory (129 x head_dim x 2 bytes: 128 keys and a q row)";
  return nullptr;
}

const char* launch_centre_tiles(const exact_args& e, const model::chain_rule& rule) {
  const std::size_t truncating_bytes = truncating_layout_of(e.in.heads, rule.promote_every > 0).total;
  const auto key_tiles = static_cast<unsigned>((e.in.n + kCentreKeys - 1) / kCentreKeys);
  const dim3 grid(key_tiles, grid_rows(e.row_count));
  if (model::truncating_form(rule, e.in.head_dim) && reinterpret_cast<std::uintptr_t>(e.in.k) % 16 == 0 &&
      truncating_bytes <= static_cast<std::size_t>(shared_limit())) {
    // A block takes about kTruncatingRows rows, which share its tables (and its keys, in the caches).
    const dim3 truncating_grid(key_tiles, grid_rows((e.row_count + kTruncatingRows - 1) / kTruncatingRows));
#if defined(__CUDACC__)
    check(cudaFuncSetAttribute(centre_truncating, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(truncating_bytes)),
          "centre_truncating shared memory");
#endif
    centre_truncating<<<truncating_grid, kCentreKeys, truncating_bytes>>>(e, rule, model::truncating_constants_of(rule.step));
    check_launch("centre_truncating");
    return "the instruction model (truncating steps in float32)";
  }
  const std::size_t bytes = staged_bytes(e.in.head_dim);
#if defined(__CUDACC__)
  check(cudaFuncSetAttribute(centre_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
        "centre_tiles shared memory");
#endif
  centre_tiles<<<grid, kCentreKeys, bytes>>>(e, rule);
  check_launch("centre_tiles");
  return "the instruction model (integer steps)";
}

}  // namespace mqa::gpu
