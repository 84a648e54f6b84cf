#include "profile.hpp"

#include <string>

#include "reference/names/names.hpp"

namespace mqa::fp8 {
namespace {

constexpr std::uint8_t bit(format f) { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(f)); }
constexpr std::uint8_t kFp8 = bit(format::e4m3fn) | bit(format::e4m3fnuz) | bit(format::e5m2) |
                             bit(format::e5m2fnuz) | bit(format::e4m3b11fnuz) | bit(format::e8m0fnu);
constexpr std::uint8_t kOcp = bit(format::e4m3fn) | bit(format::e5m2);
constexpr std::uint8_t kHip = kOcp | bit(format::e4m3fnuz) | bit(format::e5m2fnuz);
constexpr std::uint8_t kSigned = kFp8 & ~bit(format::e8m0fnu);

// NaN rules. The float32 rows are pinned by tests/data/golden/fp8 (*.from_f32.npy); CUDA's float64
// rule is read from CUDA 13.0's cuda_fp8.hpp __nv_cvt_double_to_fp8 (on the H200's nvcc 13.0.88):
// `res = 0x7E | mantissa` for e5m2, where mantissa holds the double's two top fraction bits, and
// `res |= sign` for every result, NaN included.
constexpr nan_rule kSignedE5m2Nan7E{.keeps_sign = true, .e5m2_mantissa = 2, .e5m2_takes_payload = false};
constexpr nan_rule kSignedE5m2Nan7F{.keeps_sign = true, .e5m2_mantissa = 3, .e5m2_takes_payload = false};
constexpr nan_rule kCanonical7F{.keeps_sign = false, .e5m2_mantissa = 3, .e5m2_takes_payload = false};
constexpr nan_rule kCudaDouble{.keeps_sign = true, .e5m2_mantissa = 2, .e5m2_takes_payload = true};
// DeepGEMM's fp4 cast has no NaN branch: bucketize puts a NaN past every midpoint (+max, sign dropped).
constexpr nan_rule kBucketizeNan{.keeps_sign = false, .e5m2_mantissa = 3, .e5m2_takes_payload = false,
                                 .finite_only = nan_without_code::positive_max};

// Where each float64 rule comes from.
constexpr std::string_view kMlDtypesFloat64 =
    "ml_dtypes 0.6.0 custom_float.h NPyCast: a NumPy cast into a float8 type converts the input with "
    "static_cast<float> first";
constexpr std::string_view kTorchFloat64 =
    "torch 2.11 c10/util/Float8_*.h: the fp8 types are constructed from float only, so a double becomes a "
    "float first, on the CPU and in CUDA kernels alike";
constexpr std::string_view kCudaFloat64 =
    "CUDA 13.0 cuda_fp8.hpp __nv_cvt_double_to_fp8: rounds the double's bits once (software, host and device)";
constexpr std::string_view kDeepGemmFloat64 =
    "DeepGEMM deep_gemm/utils/math.py _quantize_to_fp4_e2m1: torch ops in the input's own dtype (boundaries "
    "built with dtype=ax.dtype), so a float64 is compared with the midpoints once";
constexpr std::string_view kHipFloat64 =
    "ROCm clr amd_hip_fp8.h __hip_cvt_double_to_fp8: always the software cast_to_f8<double> (no hardware "
    "fast path, gfx942 included), the float rules on the double's own bits";

// One row per producer. Every field is cited; tests/data/golden/fp8 pins the ml_dtypes, torch
// and CUDA rows bit for bit (float32 inputs, and float64 inputs where its README lists them).
constexpr std::array<profile, 8> kProfiles{{
    // ml_dtypes 0.6 include/float8.h ConvertImpl: RNE; overflow after rounding becomes Inf (e5m2) or
    // NaN; Inf becomes NaN in the formats without one; NaN keeps its sign; e5m2 writes 0x7E; fnuz
    // flushes -0 to +0; e8m0 ties up (the M = 0 case of RNE), zero and negatives are NaN.
    // float4_e2m1fn (include/mxfloat.h) has neither Inf nor NaN: its numeric_limits infinity() is
    // max (0b0'11'1), so overflow and +-Inf give +-6; quiet_NaN() is 0b1'00'0 (-0), negated for a
    // negative NaN (+0); -0 is kept (0x8). Pinned by tests/data/golden/fp4 once generated.
    // Both ml_dtypes and torch round a float32 subnormal in (2^-127, 2^-126) up to e8m0's 2^-126
    // (they see exponent field 0 and a set guard bit; pinned by the golden files). A float64 goes
    // through float32 first, so a float64 there is first rounded to such a subnormal too.
    {.id = profile_id::ml_dtypes, .name = "ml_dtypes", .formats = kFp8 | bit(format::e2m1fn), .ties = tie_rule::to_even,
     .overflow = overflow_rule::to_nonfinite, .inf = inf_rule::to_nonfinite, .nan = kSignedE5m2Nan7E,
     .unsigned_takes_magnitude = false, .unsigned_zero_is_nan = true,
     .clamps_to_format_max = false, .e8m0_float32_subnormal_up = true, .drops_zero_sign = false,
     .float64 = float64_path::through_float32, .float64_nan = kSignedE5m2Nan7E,
     .decode_nan = nan_decoding::quiet_keep_sign,
     .source = "ml_dtypes 0.6.0 include/float8.h (ConvertImpl, kSaturate = false)", .float64_source = kMlDtypesFloat64},
    // torch <= 2.11 c10/util/Float8_*.h: as ml_dtypes, except that e5m2 goes through fp16 and so
    // writes NaN as 0x7F/0xFF, and Float8_e8m0fnu takes the exponent of |x| (sign ignored, 0 -> 0x00).
    // Decoding widens bits (payload kept, quiet bit set); fnuz and e8m0 NaN decode to 0x7F800001.
    {.id = profile_id::torch, .name = "torch", .formats = kSigned | bit(format::e8m0fnu), .ties = tie_rule::to_even,
     .overflow = overflow_rule::to_nonfinite, .inf = inf_rule::to_nonfinite, .nan = kSignedE5m2Nan7F,
     .unsigned_takes_magnitude = true, .unsigned_zero_is_nan = false,
     .clamps_to_format_max = false, .e8m0_float32_subnormal_up = true, .drops_zero_sign = false,
     .float64 = float64_path::through_float32, .float64_nan = kSignedE5m2Nan7F,
     .decode_nan = nan_decoding::c10,
     .source = "torch 2.11 c10/util/Float8_e4m3fn.h, Float8_e5m2.h, Float8_e4m3fnuz.h, Float8_e8m0fnu.h",
     .float64_source = kTorchFloat64},
    // CUDA 13 cuda_fp8.hpp __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...): RNE; overflow and +-Inf
    // saturate to +-max; every NaN becomes the canonical 0x7F (sign dropped). A double goes to
    // __nv_cvt_double_to_fp8, which rounds it once but keeps a NaN's sign and builds e5m2's NaN
    // from its payload: 0x7E for the default quiet NaN, 0x7F when fraction bit 50 is set.
    {.id = profile_id::cuda_satfinite, .name = "cuda-satfinite", .formats = kOcp, .ties = tie_rule::to_even,
     .overflow = overflow_rule::to_max, .inf = inf_rule::to_max, .nan = kCanonical7F,
     .unsigned_takes_magnitude = false, .unsigned_zero_is_nan = false,
     .clamps_to_format_max = false, .e8m0_float32_subnormal_up = false, .drops_zero_sign = false,
     .float64 = float64_path::direct, .float64_nan = kCudaDouble,
     .decode_nan = nan_decoding::quiet_keep_sign,
     .source = "CUDA 13.0 cuda_fp8.hpp __nv_cvt_float_to_fp8, __NV_SATFINITE", .float64_source = kCudaFloat64},
    // ... __NV_NOSAT: overflow and Inf give NaN with the sign (e4m3) or +-Inf (e5m2); NaN is 0x7F.
    {.id = profile_id::cuda_nosat, .name = "cuda-nosat", .formats = kOcp, .ties = tie_rule::to_even,
     .overflow = overflow_rule::to_nonfinite, .inf = inf_rule::to_nonfinite, .nan = kCanonical7F,
     .unsigned_takes_magnitude = false, .unsigned_zero_is_nan = false,
     .clamps_to_format_max = false, .e8m0_float32_subnormal_up = false, .drops_zero_sign = false,
     .float64 = float64_path::direct, .float64_nan = kCudaDouble,
     .decode_nan = nan_decoding::quiet_keep_sign,
     .source = "CUDA 13.0 cuda_fp8.hpp __nv_cvt_float_to_fp8, __NV_NOSAT", .float64_source = kCudaFloat64},
    // ROCm amd_hip_fp8.h cast_to_f8 (the software path: host code, and devices without the fast
    // path). __HIP_SATFINITE: |x| > max gives +-max (the gfx942/gfx950 fast path clamps finite
    // values with fmed3 first, the same codes); Inf and NaN are not clamped: Inf stays Inf in
    // OCP e5m2 and is NaN elsewhere (0x80 in fnuz, 0x7F|sign in e4m3fn); e5m2 NaN is 0x7F|sign.
    // Not modelled: the software path's unbounded shifts, which turn inputs below ~2^-64 into
    // nonzero codes (ROCm/rocm-systems#10591). A double takes the same software path on its own
    // bits: rounded once, the same overflow, Inf and NaN rules.
    {.id = profile_id::hip_satfinite, .name = "hip-satfinite", .formats = kHip, .ties = tie_rule::to_even,
     .overflow = overflow_rule::to_max, .inf = inf_rule::to_nonfinite, .nan = kSignedE5m2Nan7F,
     .unsigned_takes_magnitude = false, .unsigned_zero_is_nan = false,
     .clamps_to_format_max = false, .e8m0_float32_subnormal_up = false, .drops_zero_sign = false,
     .float64 = float64_path::direct, .float64_nan = kSignedE5m2Nan7F,
     .decode_nan = nan_decoding::quiet_keep_sign,
     .source = "ROCm amd_hip_fp8.h cast_to_f8 (clr hipamd/include/hip/amd_detail), __HIP_SATFINITE",
     .float64_source = kHipFloat64},
    // __HIP_NOSAT: the overflow test |x| > max runs before rounding, so 448 < x <= 464 in e4m3fn
    // (240 < x < 248 in e4m3fnuz; 248 is NaN for every profile) is NaN where the RNE libraries give max
    // (ROCm/rocm-systems#9556). fnuz writes 0x80 whatever the sign.
    {.id = profile_id::hip_nosat, .name = "hip-nosat", .formats = kHip, .ties = tie_rule::to_even,
     .overflow = overflow_rule::to_nonfinite_before_rounding, .inf = inf_rule::to_nonfinite, .nan = kSignedE5m2Nan7F,
     .unsigned_takes_magnitude = false, .unsigned_zero_is_nan = false,
     .clamps_to_format_max = false, .e8m0_float32_subnormal_up = false, .drops_zero_sign = false,
     .float64 = float64_path::direct, .float64_nan = kSignedE5m2Nan7F,
     .decode_nan = nan_decoding::quiet_keep_sign,
     .source = "ROCm amd_hip_fp8.h cast_to_f8, __HIP_NOSAT; ROCm/rocm-systems#9556", .float64_source = kHipFloat64},
    // vLLM's quantizers clamp to +-bound (the format's max unless a bound is given) with
    // torch.clamp, which also takes Inf to the bound, then cast with torch's rules: a float64
    // tensor is clamped in float64, then cast through float32 as torch does.
    {.id = profile_id::saturate, .name = "saturate", .formats = kSigned, .ties = tie_rule::to_even,
     .overflow = overflow_rule::to_nonfinite, .inf = inf_rule::to_nonfinite, .nan = kSignedE5m2Nan7F,
     .unsigned_takes_magnitude = false, .unsigned_zero_is_nan = false,
     .clamps_to_format_max = true, .e8m0_float32_subnormal_up = false, .drops_zero_sign = false,
     .float64 = float64_path::through_float32, .float64_nan = kSignedE5m2Nan7F,
     .decode_nan = nan_decoding::c10,
     .source = "vLLM scaled_fp8_quant: x.clamp(min=-bound, max=bound).to(fp8 dtype), torch casting rules",
     .float64_source = kTorchFloat64},
    // torch itself writes no e2m1 code: c10's Float4_e2m1fn_x2 is storage only (no conversion; val0 in
    // bits 3..0, val1 in bits 7..4). The torch code that does produce them for the indexer is
    // DeepGEMM's per_token_cast_to_fp4 -> _quantize_to_fp4_e2m1: |x|.clamp_max(6), then
    // torch.bucketize against the midpoints 0.25 .. 5.0 with right=False: a tie goes to the smaller
    // magnitude (0.75 -> 0.5, 1.75 -> 1.5, 3.5 -> 3, where RNE gives 1, 2, 4); the sign only where the
    // magnitude code is nonzero (no -0); Inf clamps to +-6; NaN sorts past every midpoint (ATen's
    // cus_lower_bound: "the low bound of nan ... be the end of boundary"): 0x7 whatever its sign.
    {.id = profile_id::deepgemm, .name = "deepgemm", .formats = bit(format::e2m1fn), .ties = tie_rule::toward_zero,
     .overflow = overflow_rule::to_max, .inf = inf_rule::to_max, .nan = kBucketizeNan,
     .unsigned_takes_magnitude = false, .unsigned_zero_is_nan = false,
     .clamps_to_format_max = false, .e8m0_float32_subnormal_up = false, .drops_zero_sign = true,
     .float64 = float64_path::direct, .float64_nan = kBucketizeNan,
     .decode_nan = nan_decoding::quiet_keep_sign,
     .source = "DeepGEMM deep_gemm/utils/math.py _quantize_to_fp4_e2m1 (per_token_cast_to_fp4); torch.bucketize, "
               "ATen native/Bucketization.cpp cus_lower_bound",
     .float64_source = kDeepGemmFloat64},
}};

// One row per producer of e4m3fnuz operands from e4m3fn ones. tests/reference/fp8/recast_test.cpp
// walks every code of every row against a decoder of its own and lists where code x factor is not
// the OCP value.
constexpr std::array<recast, 3> kRecasts{{
    // AITER's Triton fp8_mqa_logits on gfx942 (ROCm/aiter aiter/ops/triton/attention/fp8_mqa_logits.py
    // at 01d9c94bf6cb, the branch without a Gluon kernel; the Gluon one is not read here):
    // `(Q.to(torch.float32) * 0.5).to(torch.float8_e4m3fnuz)`, the same for KV, and
    // `kv_scales * scale_mul` with scale_mul = 2 per converted operand. By value through torch's casts:
    // -0 becomes +0 and NaN fnuz's NaN (0x80); every finite value is exact (fnuz has one more binade below).
    {.id = recast_id::aiter_triton, .name = "aiter-triton", .from = format::e4m3fn, .to = format::e4m3fnuz,
     .method = recast_method::by_value, .encoder = profile_id::torch, .negative_zero_becomes = 0x00,
     .nan_bytes_become = std::nullopt, .factor = factor_home::k_scale,
     .source = "ROCm/aiter aiter/ops/triton/attention/fp8_mqa_logits.py (01d9c94bf6cb) fp8_mqa_logits, without "
               "Gluon: (Q.to(torch.float32) * 0.5).to(torch.float8_e4m3fnuz), kv_scales * scale_mul"},
    // FlyDSL's gfx942 fp8_mqa_logits (ROCm/aiter aiter/ops/flydsl/kernels/fp8_mqa_logits.py at
    // 013159f070560): the bytes go to the MFMA as they are, `_fn_to_fnuz_i64` patches 0x80 to 0x00 in
    // each 8-byte pack, and the host multiplies kv_scales by 2 per converted operand. Nothing touches
    // the NaN bytes 0x7F/0xFF: fnuz reads them as +-240.
    {.id = recast_id::flydsl, .name = "flydsl", .from = format::e4m3fn, .to = format::e4m3fnuz,
     .method = recast_method::by_bytes, .encoder = profile_id::torch, .negative_zero_becomes = 0x00,
     .nan_bytes_become = std::nullopt, .factor = factor_home::k_scale,
     .source = "ROCm/aiter aiter/ops/flydsl/kernels/fp8_mqa_logits.py (013159f070560) _fn_to_fnuz_i64, "
               "flydsl_fp8_mqa_logits: kv_scales * scale_mul"},
    // vLLM's normalize_e4m3fn_to_e4m3fnuz (vllm/model_executor/layers/quantization/utils/w8a8_utils.py
    // at 0039d4bdd8b5): the tensor viewed as int8, -128 (0x80) set to 0, viewed as e4m3fnuz;
    // weight_scale and input_scale each doubled. FlyDSL's bytes, each operand's own scale.
    {.id = recast_id::vllm_normalize, .name = "vllm-normalize", .from = format::e4m3fn, .to = format::e4m3fnuz,
     .method = recast_method::by_bytes, .encoder = profile_id::torch, .negative_zero_becomes = 0x00,
     .nan_bytes_become = std::nullopt, .factor = factor_home::own_scale,
     .source = "vLLM vllm/model_executor/layers/quantization/utils/w8a8_utils.py (0039d4bdd8b5) "
               "normalize_e4m3fn_to_e4m3fnuz"},
}};

}  // namespace

std::span<const recast> all_recasts() { return kRecasts; }

const recast& rules(recast_id r) { return kRecasts[static_cast<std::size_t>(r)]; }

std::span<const profile> all_profiles() { return kProfiles; }

const profile& rules(profile_id p) { return kProfiles[static_cast<std::size_t>(p)]; }

// The profiles' names are their rows' (kProfiles): a new row is parsed and listed with no other edit.
std::optional<profile_id> parse_profile(std::string_view name) { return names::parse(kProfiles, name); }

std::string_view profile_names() {
  static const std::string list = names::accepted(kProfiles);
  return list;
}

}  // namespace mqa::fp8
