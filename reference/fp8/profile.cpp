#include "profile.hpp"

#include <algorithm>

namespace mqa::fp8 {
namespace {

constexpr std::uint8_t bit(format f) { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(f)); }
constexpr std::uint8_t kAll = 0x3F;
constexpr std::uint8_t kOcp = bit(format::e4m3fn) | bit(format::e5m2);
constexpr std::uint8_t kHip = kOcp | bit(format::e4m3fnuz) | bit(format::e5m2fnuz);
constexpr std::uint8_t kSigned = kAll & ~bit(format::e8m0fnu);

// One row per producer. Every field is cited; ../shared/golden/fp8 pins the ml_dtypes, torch
// and CUDA rows bit for bit.
constexpr std::array<profile, 7> kProfiles{{
    // ml_dtypes 0.6 include/float8.h ConvertImpl: RNE; overflow after rounding becomes Inf (e5m2) or
    // NaN; Inf becomes NaN in the formats without one; NaN keeps its sign; e5m2 writes 0x7E; fnuz
    // flushes -0 to +0; e8m0 ties up (the M = 0 case of RNE), zero and negatives are NaN.
    {profile_id::ml_dtypes, "ml_dtypes", kAll, overflow_rule::to_nonfinite, inf_rule::to_nonfinite, true, 2,
     false, true, false, nan_decoding::quiet_keep_sign,
     "ml_dtypes 0.6.0 include/float8.h (ConvertImpl, kSaturate = false)"},
    // torch <= 2.11 c10/util/Float8_*.h: as ml_dtypes, except that e5m2 goes through fp16 and so
    // writes NaN as 0x7F/0xFF, and Float8_e8m0fnu takes the exponent of |x| (sign ignored, 0 -> 0x00).
    // Decoding widens bits (payload kept, quiet bit set); fnuz and e8m0 NaN decode to 0x7F800001.
    {profile_id::torch, "torch", kSigned | bit(format::e8m0fnu), overflow_rule::to_nonfinite,
     inf_rule::to_nonfinite, true, 3, true, false, false, nan_decoding::c10,
     "torch 2.11 c10/util/Float8_e4m3fn.h, Float8_e5m2.h, Float8_e4m3fnuz.h, Float8_e8m0fnu.h"},
    // CUDA 13 cuda_fp8.hpp __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...): RNE; overflow and +-Inf
    // saturate to +-max; every NaN becomes the canonical 0x7F (sign dropped).
    {profile_id::cuda_satfinite, "cuda-satfinite", kOcp, overflow_rule::to_max, inf_rule::to_max, false, 3, false,
     false, false, nan_decoding::quiet_keep_sign, "CUDA 13.0 cuda_fp8.hpp __nv_cvt_float_to_fp8, __NV_SATFINITE"},
    // ... __NV_NOSAT: overflow and Inf give NaN with the sign (e4m3) or +-Inf (e5m2); NaN is 0x7F.
    {profile_id::cuda_nosat, "cuda-nosat", kOcp, overflow_rule::to_nonfinite, inf_rule::to_nonfinite, false, 3,
     false, false, false, nan_decoding::quiet_keep_sign, "CUDA 13.0 cuda_fp8.hpp __nv_cvt_float_to_fp8, __NV_NOSAT"},
    // ROCm amd_hip_fp8.h cast_to_f8 (the software path: host code, and devices without the fast
    // path). __HIP_SATFINITE: |x| > max gives +-max (the gfx942/gfx950 fast path clamps finite
    // values with fmed3 first, the same codes); Inf and NaN are not clamped: Inf stays Inf in
    // OCP e5m2 and is NaN elsewhere (0x80 in fnuz, 0x7F|sign in e4m3fn); e5m2 NaN is 0x7F|sign.
    {profile_id::hip_satfinite, "hip-satfinite", kHip, overflow_rule::to_max, inf_rule::to_nonfinite, true, 3,
     false, false, false, nan_decoding::quiet_keep_sign,
     "ROCm amd_hip_fp8.h cast_to_f8 (clr hipamd/include/hip/amd_detail), __HIP_SATFINITE"},
    // __HIP_NOSAT: the overflow test |x| > max runs before rounding, so 448 < x <= 464 in e4m3fn
    // (240 < x <= 248 in e4m3fnuz) is NaN where the RNE libraries give max
    // (ROCm/rocm-systems#9556). fnuz writes 0x80 whatever the sign.
    {profile_id::hip_nosat, "hip-nosat", kHip, overflow_rule::to_nonfinite_before_rounding, inf_rule::to_nonfinite,
     true, 3, false, false, false, nan_decoding::quiet_keep_sign,
     "ROCm amd_hip_fp8.h cast_to_f8, __HIP_NOSAT; ROCm/rocm-systems#9556"},
    // vLLM's quantizers clamp to +-bound (the format's max unless a bound is given) with
    // torch.clamp, which also takes Inf to the bound, then cast with torch's rules.
    {profile_id::saturate, "saturate", kSigned, overflow_rule::to_nonfinite, inf_rule::to_nonfinite, true, 3, false,
     false, true, nan_decoding::c10,
     "vLLM scaled_fp8_quant: x.clamp(min=-bound, max=bound).to(fp8 dtype), torch casting rules"},
}};

}  // namespace

std::span<const profile> all_profiles() { return kProfiles; }

const profile& rules(profile_id p) { return kProfiles[static_cast<std::size_t>(p)]; }

std::optional<profile_id> parse_profile(std::string_view name) {
  const auto it = std::find_if(kProfiles.begin(), kProfiles.end(), [&](const profile& p) { return p.name == name; });
  if (it == kProfiles.end()) return std::nullopt;
  return it->id;
}

std::string_view profile_names() {
  return "ml_dtypes, torch, cuda-satfinite, cuda-nosat, hip-satfinite, hip-nosat, saturate";
}

}  // namespace mqa::fp8
