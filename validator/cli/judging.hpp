// What `check` and `shrink` both do with a bundle and an output file: read the output as the
// bundle's shape demands, compute the references the comparator judges against (checked against the
// bundle's reference.npy), judge, and print the judgement for a person.
#pragma once

#include <optional>
#include <string>
#include <xtensor/xarray.hpp>

#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/compare/comparator.hpp"

namespace mqa::cli {

// float32 [m, S], S >= n; anything else is an input_error naming the file.
struct output_file {
  xt::xarray<float> values;
  std::int64_t m = 0, n = 0, stride = 0;
  kernels::output_view view() { return {values.data(), m, n, stride}; }
};
output_file read_output(const std::string& path, std::int64_t m, std::int64_t n);

struct references {
  exact::result judged;                 // with the contract's relu rule
  std::optional<exact::result> centre;  // a modelled contract's (runner::centre_for)
};

// The bundle's stored reference.npy must be the keeps-NaN reference of its inputs: else an
// input_error (the bundle was modified or mixed up), `bundle_dir` naming it. A paged bundle is
// computed from its cache (`paged`); `p` is then its rows (inputs::problem_of: no keys).
references references_for(const bundle::bundle& b, const exact::problem& p, const paged::problem* paged,
                          const kernels::contract& c, unsigned threads, const std::string& bundle_dir);

// The comparator, then (with `repeat`) the determinism check and (with `diagnose`) the diagnosis.
// A paged output is never diagnosed: its rows carry no keys for the models to re-run on.
compare::judgement judge_output(const exact::problem& p, const paged::problem* paged, const references& r,
                                const kernels::contract& c, std::optional<std::int64_t> topk,
                                kernels::output_view output, std::optional<kernels::output_view> repeat, bool diagnose,
                                unsigned threads);

// "OUT: FAIL (case under contract)", the metrics, one line per finding, the notes.
void print_judgement(const std::string& shown, const compare::judgement& j, const std::string& case_name,
                     const kernels::contract& c);

}  // namespace mqa::cli
