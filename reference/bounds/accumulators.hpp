// The dot accumulators a kernel may declare, one row each. Everything the tree knows about one
// accumulator is in its row, and every consumer reads the row: its spelling (case files, suites,
// `--accumulate`), the head sum it comes with, the matrix instruction that models it bit for bit,
// the rounding its error bound charges (error_bound.cpp), its help text (the command line) and the
// sentence the diagnosis says when a kernel's dots look like it (validator/diagnose). Adding an
// accumulator is adding a row, plus its instruction model (reference/mma) when it has one:
// docs/design.md, "How to add an accumulator". tests/reference/bounds/accumulators_test.cpp walks
// every row, so a row without a model or a bound fails a test instead of passing silently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "reference/bounds/arithmetic.hpp"
#include "reference/mma/instruction.hpp"

namespace mqa::bounds {

// The rounding of one dot product before relu, as the bound charges it (README.md derives each):
// relative error gamma_{D + steps}(unit), then (1 + last) - 1 more for one last rounding of the
// finished dot. unit == 0: the dot is not rounded at all (exact), or modelled bit for bit (the
// centre the comparator uses already holds the model's dots).
struct dot_rounding {
  double unit = 0;  // unit roundoff of each accumulation step
  int steps = 0;    // roundings per dot beyond head_dim D (-1: the D - 1 additions of D exact products)
  double last = 0;  // unit roundoff of a last rounding of the whole dot (bfloat16 before relu); 0: none
};

struct dot_accumulator_traits {
  dot_accumulator id;
  std::string_view name;              // as case files, suites and --accumulate spell it
  head_accumulator heads;             // the head sum a kernel declaring this dot alone comes with
  const mma::instruction* model = nullptr;  // the instruction it is modelled on bit for bit; nullptr: bounded
  dot_rounding rounding = {};         // what the bound charges the dot (none for exact and modelled dots)
  std::string_view help;              // one line for --help: what the kernel does
  // The diagnosis's hypothesis that a kernel's dots are computed this way: a stable cause id (in
  // reports) and the sentence completing "matches ...". Empty for `exact`: the reference's own dots
  // are never a bug's cause.
  std::string_view cause = {};
  std::string_view diagnosis = {};
};

// Every row, in the order messages and --help list them (the enum's order).
std::span<const dot_accumulator_traits> dot_accumulators();
const dot_accumulator_traits& traits(dot_accumulator a);

// "sm90-wgmma or gfx942-mfma": the accumulators with a matrix-instruction model, for messages.
std::string modelled_accumulator_names();

}  // namespace mqa::bounds
