// One fp8 format's codes as exact numbers, in the two forms the dot products use: float64
// values (for the BLAS path) and integer multiples of the format's unit (for the int128 path).
//
// Every finite value of an fp8 format with subnormals is an integer multiple of its smallest
// positive value, the unit (2^-9 for e4m3fn, 2^-16 for e5m2, ...): normal values are
// (2^m + f) * 2^(e - bias - m) with e >= 1, subnormals f * 2^(1 - bias - m). So a dot product
// sum_d q_d k_d is an integer number of unit_q * unit_k, and it is exact in any arithmetic that
// holds that integer: float64 while it stays <= 2^53 in magnitude, int128 beyond.
#pragma once

#include <array>
#include <cstdint>

#include "reference/exact/logits.hpp"
#include "reference/fp8/format.hpp"

namespace mqa::exact::detail {

struct code_table {
  fp8::format format;
  double unit = 0;                      // smallest positive finite value
  std::array<double, 256> value{};      // exact value of finite codes; 0 for NaN and Inf codes
  std::array<std::int64_t, 256> units{};  // value / unit (an integer); 0 for NaN and Inf codes
  std::array<bool, 256> nonfinite{};    // NaN or Inf code
  std::int64_t max_units = 0;           // largest |units|
};

// Throws std::invalid_argument when the format's finite values span 2^62 units or more
// (e8m0fnu: 2^-127 .. 2^127), naming the formats that are accepted.
code_table make_code_table(fp8::format f, const char* operand);

// The engine without int8 residues: float64_gemm when q_max_units * k_max_units * head_dim <= 2^53
// (every partial sum is an integer number of units below 2^53: float64 is exact), else int128
// (integer units accumulated in int128, then split into a float64 pair). Throws
// std::invalid_argument when even int128 could not hold the sum (the int128 path keeps it below
// 2^100, so that the float64 pair hi + lo, 53 + 53 bits, holds it exactly). With block scales
// a token's unit is the code's unit times its smallest block scale, so its largest
// value is max_units times 2^(its blocks' exponent span): the caller passes that.
dot_engine float_or_integer_engine(std::int64_t q_max_units, std::int64_t k_max_units, std::int64_t head_dim);

}  // namespace mqa::exact::detail
