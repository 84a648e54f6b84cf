// What each in-window element is allowed: the figures a bound multiplies (bounds::element), and
// the row loop that turns them into each element's allowed |error| and whether an overflow there
// is excused. The comparator evaluates this for every in-window element of every judged row (half
// a billion at production shapes), so the row loop runs in vector lanes; allowance_at is the
// definition, one element at a time, and the lanes must give its bits (tests pin every instruction
// set the CPU has against it). One exception: where the allowance is NaN (an element a NaN
// weight or k_scale reaches), only that it is a NaN is promised, not its sign or payload (the
// compiler may commute an addition of two NaNs); nothing compares a NaN allowance's bits.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/bounds/error_bound.hpp"
#include "reference/exact/logits.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::compare {

// What the bound's terms multiply, from the inputs: per key |s| and the largest |k_d|; per row
// the weights' and queries' absolute sums. Products of a row's and a key's figure bound the
// per-element sums from above (sum_h P_h <= sum_{h,d} |q_hd| * max_d |k_d|); they feed only the
// underflow and overflow terms, where a coarse upper bound costs no power.
struct key_figures {
  std::vector<double> scale_abs, k_max;
  std::vector<std::uint8_t> finite;  // 1 where the key's every value (block scales applied) and its scale are finite
};
struct row_figures {
  double weights_abs = 0, weight_max = 0;
  double q_abs = 0;               // sum_{h,d} |q|
  double q_head_max = 0;          // max_h sum_d |q_hd|
  double weighted_q_abs = 0;      // sum_h |w_h| sum_d |q_hd|
  double small_weight_q_abs = 0;  // sum over heads with |w_h| < the weight format's normal range
  bool finite = true;             // every q value (block scales applied) and weight finite
};

key_figures key_figures_of(const exact::problem& p);
// A paged problem's keys differ per request: column j of request b's rows is its key j, read
// through its block table (columns past its longest window are never in a window: 0).
key_figures paged_key_figures(const paged::problem& p, std::int64_t request);
row_figures row_figures_of(const exact::problem& p, std::int64_t i, double small_weight_below);

// The figures the bound's terms multiply at key j of a row, with magnitude A (value_abs left 0).
bounds::element element_at(const row_figures& row, const key_figures& keys, std::size_t j, double magnitude);

// Half the spacing of float32 just above |x| (0 for Inf and NaN): 2^(e - 151) for a biased
// exponent e >= 1, 2^-150 for subnormals and zero, 2^103 at FLT_MAX.
double half_ulp(float x);

struct allowance {
  double allowed = 0;         // |kernel - centre| allowed, half an ulp of the float centre included
  bool may_overflow = false;  // +-inf (or an overflowed -inf) is a legitimate result here
};

// Element (row r, key j) with centre value `expected` and magnitude A (inf: a non-finite input
// decided it, and nothing is excused).
allowance allowance_at(const bounds::error_bound& bound, const row_figures& row, const key_figures& keys,
                       std::size_t j, float expected, double magnitude);

// allowance_at for keys [begin, end) of one row: allowed[j - begin], may_overflow[j - begin] (1 or 0).
void allowances(const bounds::error_bound& bound, const row_figures& row, const key_figures& keys,
                std::int64_t begin, std::int64_t end, const float* centre_row, const double* magnitude_row,
                double* allowed, std::uint8_t* may_overflow, mma::lane_isa isa = mma::lane_isa::best);

}  // namespace mqa::compare
