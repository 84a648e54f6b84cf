// The planted bugs of BUGCLASSES.md that edit a problem's inputs or windows, as functions of the
// CPU model's knobs (model_config::corrupt_inputs, model_config::window_of). One definition serves
// the mutants that plant them (registry.cpp) and the diagnosis that re-runs them to reproduce a
// kernel's output (validator/diagnose), so a diagnosis names exactly the bug a mutant carries.
#pragma once

#include <cstdint>
#include <optional>

#include "kernels/cpu/model.hpp"
#include "reference/fp8/format.hpp"

namespace mqa::kernels::cpu {

// The format whose bytes a mix-up reads instead: e4m3fn <-> e4m3fnuz, e5m2 <-> e5m2fnuz (the same
// byte is half the value in fnuz, one more bias); nullopt for formats without such a sibling.
std::optional<fp8::format> fnuz_sibling(fp8::format f);

// BUGCLASSES 1: q's and/or k's bytes read in another format, scales unchanged.
void read_as(owned_problem& p, std::optional<fp8::format> q_as, std::optional<fp8::format> k_as);

// BUGCLASSES 2, 3: vLLM's normalize_e4m3fn_to_e4m3fnuz on ROCm: e4m3fn operands keep their bytes,
// are read as e4m3fnuz (half the value) and their scales doubled (q's lives in the weights). The
// correct version also turns 0x80 (-0, NaN in fnuz) into 0 and NaN bytes 0x7F/0xFF into 0x80.
void normalize_to_fnuz(owned_problem& p, bool zero_the_0x80, bool fix_nan_bytes);

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
exact::window unsigned_window(const exact::problem& p, std::int64_t i);       // -1 read as 4294967295

}  // namespace mqa::kernels::cpu
