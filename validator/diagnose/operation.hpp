// A planted bug as an edit of the operation itself, so that the exact reference of the edited
// operation is what a kernel with that bug computes, up to the rounding its contract bounds: the
// within-bound half of the diagnosis (diagnose.hpp). The edit is read off the difference between a
// correct model's configuration and the planted one:
//
//   corrupt_inputs, window_of    the inputs and windows as the model sees them (windows clamped)
//   dropped_head                 that head's weight is 0
//   dot_length                   q's elements past the length are the code 0x00 (+0 in every format)
//   weight_factor, scale_factor  weights and k_scale multiplied in float32, as the model does
//   scale before relu            for a key with k_scale < 0, relu(s x) = |s| relu(-x): its k codes
//                                negated and |s| its scale (the exact operation scales after relu)
//   relu, dot, dot_to_bf16       the contract: relu rule, dot accumulator (bf16 for dot_to_bf16)
//
// Output-side knobs (outside fill, skipped rows, unstored tiles, wrapped offsets, launch-dependent
// order) have no such edit: they are reproduced bit for bit or not at all.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "kernels/contract.hpp"
#include "kernels/cpu/model.hpp"

namespace mqa::diagnose {

struct edited_operation {
  std::unique_ptr<kernels::cpu::owned_problem> problem;  // its view is the edited problem
  kernels::contract contract;
  bool inputs_edited = false;  // false: only the contract differs (a declaration the kernel could make)
};

// nullopt when `planted` turns a knob that has no edit of the operation. `declare`, when set,
// edits the contract further.
std::optional<edited_operation> materialize(const kernels::cpu::model_config& base,
                                            const kernels::cpu::model_config& planted, const exact::problem& p,
                                            const kernels::contract& declared,
                                            const std::function<void(kernels::contract&)>& declare = {});

// The command-line flags that declare `to` instead of `from` ("--accumulate bf16", "--relu fmax"),
// for the contract fields that can differ by a planted bug; empty when none differs.
std::string flags_for(const kernels::contract& from, const kernels::contract& to);

}  // namespace mqa::diagnose
