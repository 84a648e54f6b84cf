// The operation as the GPU sources see it: plain records of device pointers and sizes, and the
// fp8 decoding rule, with no dependency beyond <cstdint>. Both compilers read this header: nvcc
// or hipcc for the kernels, the host compiler for the code that fills these records.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIP__) || defined(__HIPCC__)
#define MQA_HOST_DEVICE __host__ __device__
#else
#define MQA_HOST_DEVICE
#endif

namespace mqa::gpu {

// A signed fp8 format with subnormals, as its decoding needs it: the same traits the reference
// keeps in reference/fp8/format.hpp, reduced to what a kernel reads.
enum class nan_rule : std::uint8_t {
  all_ones,       // S.1111.111 is NaN, no Inf (OCP e4m3fn)
  ieee,           // all-ones exponent: zero mantissa Inf, else NaN (e5m2)
  negative_zero,  // 0x80 alone is NaN, no Inf, no -0 (fnuz formats)
};

struct code_format {
  std::int32_t mantissa_bits = 3;
  std::int32_t bias = 7;
  nan_rule nan = nan_rule::all_ones;
};

// Bits of a float32 0.0f / -inf / the runner's markers, without <limits> on the device.
inline constexpr std::uint32_t kNegativeInfinityBits = 0xFF800000u;
// A quiet NaN whose payload no arithmetic produces: a value still holding it was never written.
inline constexpr std::uint32_t kPoisonBits = 0x7FC0DEADu;
// Guard-band canary around the output buffer (a signalling-NaN pattern no kernel writes).
inline constexpr std::uint32_t kCanaryBits = 0x7F8CA7A5u;

// A float from its bits (a union: GCC, Clang and NVCC define this reading; it compiles to a move).
MQA_HOST_DEVICE inline float float_from_bits(std::uint32_t bits) {
  union {
    std::uint32_t u;
    float f;
  } pun{bits};
  return pun.f;
}

// 2^e for -149 <= e <= 127, exactly, without ldexp (host and device alike).
MQA_HOST_DEVICE inline float exact_power_of_two(int e) {
  return float_from_bits(e >= -126 ? static_cast<std::uint32_t>(e + 127) << 23 : 1u << static_cast<unsigned>(e + 149));
}

// The exact value of one code. Non-finite codes decode to a quiet NaN (sign kept) or +-Inf, as
// the format says; every finite value of these formats is a float32 exactly.
MQA_HOST_DEVICE inline float decode_code(const code_format& f, std::uint8_t code) {
  const int m = f.mantissa_bits;
  const int exponent_bits = 7 - m;
  const int exponent = (code >> m) & ((1 << exponent_bits) - 1);
  const int fraction = code & ((1 << m) - 1);
  const std::uint32_t sign = (code & 0x80u) << 24;
  bool nan = false, inf = false;
  switch (f.nan) {
    case nan_rule::all_ones: nan = (code & 0x7F) == 0x7F; break;
    case nan_rule::ieee:
      inf = exponent == (1 << exponent_bits) - 1 && fraction == 0;
      nan = exponent == (1 << exponent_bits) - 1 && fraction != 0;
      break;
    case nan_rule::negative_zero: nan = code == 0x80; break;
  }
  if (nan) return float_from_bits(sign | 0x7FC00000u);
  if (inf) return float_from_bits(sign | 0x7F800000u);
  // Subnormal: fraction * 2^(1 - bias - m); normal: (2^m + fraction) * 2^(exponent - bias - m).
  const int significand = exponent == 0 ? fraction : (1 << m) + fraction;
  const int scale = (exponent == 0 ? 1 : exponent) - f.bias - m;
  const float magnitude = static_cast<float>(significand) * exact_power_of_two(scale);
  return sign != 0 ? -magnitude : magnitude;
}

// Whether a code is NaN or Inf in its format.
MQA_HOST_DEVICE inline bool code_is_nonfinite(const code_format& f, std::uint8_t code) {
  const float v = decode_code(f, code);
  return v != v || v - v != 0.0f;
}

// One problem on the device: inputs row-major as in reference/exact/logits.hpp, the output
// float32 [m, stride].
struct logits_args {
  const std::uint8_t* q = nullptr;  // [m, heads, head_dim]
  const std::uint8_t* k = nullptr;  // [n, head_dim]
  const float* k_scale = nullptr;   // [n]
  const float* weights = nullptr;   // [m, heads]
  const std::int32_t* ks = nullptr; // [m]
  const std::int32_t* ke = nullptr; // [m]
  float* out = nullptr;             // [m, stride]
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0, stride = 0;
  code_format q_format, k_format;
};

// The window row i covers, clamped to [0, n) (empty when end <= begin).
struct key_window {
  std::int64_t begin, end;
};
MQA_HOST_DEVICE inline key_window clamped_window(std::int32_t ks, std::int32_t ke, std::int64_t n) {
  const std::int64_t b = ks < 0 ? 0 : ks;
  const std::int64_t e = ke > n ? n : ke;
  return {b, e};
}

// The paged decode operation (reference/paged/problem.hpp): q and weights by row
// b * next_n + t, each request's keys in the cache's pages through its block table, the output
// float32 [batch * next_n, stride] over max_context columns.
struct paged_args {
  const std::uint8_t* q = nullptr;            // [batch * next_n, heads, head_dim]
  const float* weights = nullptr;             // [batch * next_n, heads]
  const std::uint8_t* kv_cache = nullptr;     // [num_blocks, page_bytes]: codes, then float32 scales
  const std::int32_t* block_table = nullptr;  // [batch, max_blocks]
  const std::int32_t* context_lens = nullptr; // [batch], or [batch, next_n] when context_lens_2d
  float* out = nullptr;                       // [batch * next_n, stride]
  std::int64_t batch = 0, next_n = 1, heads = 0, head_dim = 0;
  std::int64_t block_kv = 0, num_blocks = 0, page_bytes = 0, max_blocks = 0, max_context = 0, stride = 0;
  bool context_lens_2d = false;
  code_format q_format, k_format;
};

// Row `row`'s window [0, end): context_lens[b, t] (2-D) or L_b - next_n + t + 1 (1-D, DeepGEMM's
// k <= L - next_n + t), clamped to [0, max_context].
MQA_HOST_DEVICE inline std::int64_t paged_window_end(const paged_args& a, std::int64_t row) {
  const std::int64_t b = row / a.next_n, t = row % a.next_n;
  const std::int64_t end =
      a.context_lens_2d ? static_cast<std::int64_t>(a.context_lens[row]) : a.context_lens[b] - a.next_n + t + 1;
  return end < 0 ? 0 : (end > a.max_context ? a.max_context : end);
}

// A float32 from four little-endian bytes at any alignment (a scale sits at block_kv x head_dim +
// 4 x slot bytes into its page, 4-aligned only when head_dim or block_kv is a multiple of 4).
MQA_HOST_DEVICE inline float float_from_bytes(const std::uint8_t* at) {
  return float_from_bits(static_cast<std::uint32_t>(at[0]) | static_cast<std::uint32_t>(at[1]) << 8 |
                         static_cast<std::uint32_t>(at[2]) << 16 | static_cast<std::uint32_t>(at[3]) << 24);
}

// relu that keeps NaN (IEEE, torch.relu): the contract every kernel here declares.
MQA_HOST_DEVICE inline float relu_keep_nan(float x) { return x > 0.0f || x != x ? x : 0.0f; }

}  // namespace mqa::gpu
