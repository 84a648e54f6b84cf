// The planted bugs of BUGCLASSES.md that edit a problem's inputs or windows, as functions of the
// CPU model's knobs (model_config::corrupt_inputs, model_config::window_of). One definition serves
// the mutants that plant them (registry.cpp) and the diagnosis that re-runs them to reproduce a
// kernel's output (validator/diagnose), so a diagnosis names exactly the bug a mutant carries.
#pragma once

#include <cstdint>
#include <optional>

#include "kernels/cpu/model.hpp"
#include "reference/fp8/format.hpp"
#include "reference/fp8/profile.hpp"

namespace mqa::kernels::cpu {

// The format whose bytes a mix-up reads instead: e4m3fn <-> e4m3fnuz, e5m2 <-> e5m2fnuz (the same
// byte is half the value in fnuz, one more bias); nullopt for formats without such a sibling.
std::optional<fp8::format> fnuz_sibling(fp8::format f);

// BUGCLASSES 1: q's and/or k's bytes read in another format, scales unchanged.
void read_as(owned_problem& p, std::optional<fp8::format> q_as, std::optional<fp8::format> k_as);

// BUGCLASSES 2, 3: vLLM's normalize_e4m3fn_to_e4m3fnuz on ROCm: e4m3fn operands keep their bytes,
// are read as e4m3fnuz (half the value) and their scales doubled (q's lives in the weights). The
// correct version also turns 0x80 (-0, NaN in fnuz) into 0 and NaN bytes 0x7F/0xFF into 0x80;
// vLLM's own (the vllm-normalize recast of reference/fp8/profile.cpp) fixes 0x80 only.
void normalize_to_fnuz(owned_problem& p, bool zero_the_0x80, bool fix_nan_bytes);

// The gfx942 path: e4m3fn operands recast for the fnuz MFMA as a producer does (fp8::recast, one
// row per library in reference/fp8/profile.cpp), their factors multiplied into the scales the row
// names. Correct as the rows are written, up to what the rows themselves lose (the NaN bytes of the
// by-bytes rows, BUGCLASSES 3). `recombine` plants BUGCLASSES 22: FlyDSL reads each lane's 8 codes
// along head_dim as one 64-bit pack, fixes its two 32-bit halves and widens them back; widened
// with sign extension (ROCm/aiter#4606; the fix proposed in #5452 landed as #5476), a low half
// whose top byte (the pack's element 3) is negative fills elements 4..7 with 0xFF, e4m3fnuz's -240.
enum class pack_recombine : std::uint8_t { zero_extended, sign_extended };
void recast_for_gfx942(owned_problem& p, const fp8::recast& r,
                       pack_recombine recombine = pack_recombine::zero_extended);

// A by-bytes recast with its NaN bytes written as the target format's NaN: FlyDSL's with BUGCLASSES 3
// taken out, the base the gfx942 mutants plant their one bug into.
fp8::recast keeping_nan(fp8::recast r);

// BUGCLASSES 23: a by-bytes recast whose -0 scrub writes `written` instead of 0x00. 0x81 is
// e4m3fnuz's smallest negative subnormal (-2^-10; -2^-9 once the factor is applied), not zero.
fp8::recast scrubbing_negative_zero_to(fp8::recast r, std::uint8_t written);

// BUGCLASSES 4: k requantized to e4m3fnuz with scale = amax / bound: with the OCP bound 448
// the largest elements of every key pass e4m3fnuz's 240 and become NaN.
void requantize_k_to_fnuz(owned_problem& p, double bound);  // leaves block-scaled e2m1fn keys as they are

// BUGCLASSES 9: weights [M, H] read as [H, M].
void transpose_weights(owned_problem& p);

// A float32 input held in a narrower tensor before the kernel reads it: k_scale or the weights
// rounded to bfloat16 (nearest, ties to even), as a bf16 tensor, or a cast on the way, would hold them.
void round_k_scale_to_bfloat16(owned_problem& p);
void round_weights_to_bfloat16(owned_problem& p);

// Windows as buggy kernels compute them for row i (BUGCLASSES 11, 14, 15, 19).
exact::window inclusive_end_window(const exact::problem& p, std::int64_t i);  // key ke written too
exact::window aligned_down_window(const exact::problem& p, std::int64_t i, std::int64_t alignment);
exact::window previous_row_window(const exact::problem& p, std::int64_t i);   // cu_seqlen off by one
exact::window next_row_window(const exact::problem& p, std::int64_t i);       // off by one the other way
exact::window unsigned_window(const exact::problem& p, std::int64_t i);       // -1 read as 4294967295

}  // namespace mqa::kernels::cpu
