// Elements that involve a non-finite input (a NaN or Inf code, a non-finite weight or k_scale):
// IEEE arithmetic carried out exactly (logits.hpp states the rules). Rare, so plainly scalar.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "codes.hpp"
#include "head_sum.hpp"
#include "reference/exact/logits.hpp"

namespace mqa::exact::detail {

enum class value_class : std::uint8_t { finite, nan, positive_inf, negative_inf };

// The class of sum_d q_d k_d under IEEE rules (a NaN code or inf * 0 gives NaN, +inf + -inf NaN).
// Finite operands give a finite dot: it stays below 2^100 (codes.hpp), no overflow.
value_class dot_class(std::span<const std::uint8_t> q, std::span<const std::uint8_t> k, fp8::format q_format,
                      fp8::format k_format);

// One element whose inputs may be non-finite, its dots gathered into one column: classes[h] is
// head h's dot class, and where it is finite, dot_hi[h] (+ dot_lo[h] when dot_lo is not null)
// is the exact dot. Returns the element's value when a non-finite input decides it (NaN or
// +-inf), or nullopt when every term is finite: then the column has been rewritten so that
// head_sums computes the element (a head whose relu is 0 because of a non-finite dot gets 0).
std::optional<float> nonfinite_logit(std::span<const value_class> classes, relu_rule relu, double* dot_hi,
                                     double* dot_lo, const float* weights, float k_scale);

}  // namespace mqa::exact::detail
