// The diagnosis's table of hypotheses: the planted bugs of BUGCLASSES.md, and a few neighbours of
// them, each a setting of the CPU model (kernels/cpu/model.hpp, planted.hpp) that a kernel's output
// may be reproduced by. A hypothesis lists the finding classes it can explain (it is tried only
// for those) and makes its candidates from what the problem and the output show: none where it
// cannot apply (no negative k_scale, no empty row, no NaN in the exact logits), parameters read off
// the output where the bug has one (the width of an unstored tile, where offsets wrap, a constant
// factor). Ordered by cost and specificity: output-side and window bugs, then input bugs, then the
// declared arithmetic. A paged decode problem is offered the prefill hypotheses that
// can apply to its requests (run on each request as the model's paged twin runs them) and the
// decode path's own readings of the cache (kernels/cpu/paged.hpp), which no prefill problem is.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/model.hpp"
#include "kernels/cpu/paged.hpp"
#include "validator/compare/finding.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/diagnose/sample.hpp"

namespace mqa::diagnose {

// What candidates may be made from.
struct situation {
  const compare::subject& e;
  const sample& s;
  const compare::judgement& judged;  // the whole output's findings (their first elements)
  const kernels::cpu::model_config& base;  // the correct model the bugs are planted into
};

struct candidate {
  candidate(std::string cause_id, std::string sentence, std::function<void(kernels::cpu::model_config&)> edit)
      : cause(std::move(cause_id)), what(std::move(sentence)), plant(std::move(edit)) {}

  std::string cause;  // stable id, reported in JSON: "inclusive-end", "fnuz-mixup-k", ...
  std::string what;   // completes "matches ...": "a window end read as inclusive (key ke written)"
  std::function<void(kernels::cpu::model_config&)> plant;
  // A paged problem's reading bug (kernels/cpu/paged.hpp), planted with `plant`; only paged
  // problems are offered candidates that set it.
  std::function<void(kernels::cpu::paged_reading&)> read;
  // Said instead of `what` when the reproduction is only within the bound and another cause would
  // be within it too (a factor on the weights or on k_scale): empty for "same as what".
  std::string what_within_bound;
  bool within_bound = true;  // false: only a bit-for-bit reproduction names this cause
  // A declaration the kernel may have meant, beyond what `plant` implies (operation.hpp): the
  // float32 dot of a kernel declared exact, which the model (float32 already) cannot plant.
  std::function<void(kernels::contract&)> declare;
};

struct hypothesis {
  std::string_view name;
  std::vector<compare::finding_class> explains;
  std::function<std::vector<candidate>(const situation&)> candidates;
};

const std::vector<hypothesis>& hypotheses();

}  // namespace mqa::diagnose
