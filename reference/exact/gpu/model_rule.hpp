// From reference/mma's instruction to the plain record the GPU's model takes (model_step.hpp):
// host code only.
#pragma once

#include <cstdint>

#include "reference/exact/gpu/model_step.hpp"
#include "reference/mma/instruction.hpp"

namespace mqa::gpu::model {

inline rounding rounding_of(mma::rounding r) {
  switch (r) {
    case mma::rounding::toward_zero: return rounding::toward_zero;
    case mma::rounding::down: return rounding::down;
    case mma::rounding::nearest_even: return rounding::nearest_even;
  }
  return rounding::nearest_even;
}

inline chain_rule chain_rule_of(const mma::instruction& ins, std::int64_t promote_every) {
  const mma::fused_step& s = ins.step;
  chain_rule c;
  c.step = {s.products,        s.even_odd_lanes ? 1 : 0, s.term_bits,        rounding_of(s.term_rule),
            s.lane_bits,       rounding_of(s.lane_rule), s.accumulator_apart ? 1 : 0, s.sum_bits,
            s.accumulator_bits, s.accumulator_reach,      rounding_of(s.apart_rule), s.result_bits,
            rounding_of(s.result_rule)};
  c.promote_every = static_cast<std::int32_t>(promote_every);
  return c;
}

}  // namespace mqa::gpu::model
