// What `check` and `shrink` both do with a bundle and an output file: read the output as the
// bundle's shape demands, compute the references the comparator judges against (checked against the
// bundle's reference.npy), judge, and print the judgement for a person. `check` judges in row
// blocks (judge_in_blocks); `shrink` cuts the whole output and its references.
#pragma once

#include <optional>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/io/npy.hpp"

namespace mqa::cli {

// float32 [m, S], S >= n: its S; anything else is an input_error naming the file.
std::int64_t output_stride(const std::string& path, std::int64_t m, std::int64_t n);

// float32 [m, S], S >= n; anything else is an input_error naming the file.
struct output_file {
  xt::xarray<float> values;
  std::int64_t m = 0, n = 0, stride = 0;
  kernels::output_view view() { return {values.data(), m, n, stride}; }
};
output_file read_output(const std::string& path, std::int64_t m, std::int64_t n);

// A kernel's output as its contract declares it: float32, or bfloat16 under
// --logits-dtype bf16 (uint16 bits or ml_dtypes' '<V2', widened); [m, S >= n] with absolute
// columns, or [m, S >= the longest window] with relative ones (row i's key ks[i] + c at column c),
// mapped onto the absolute [m, n] image the comparator judges (-inf outside the windows, which a
// relative contract leaves undefined: dont_care). Anything else is an input_error naming the file.
struct judged_output {
  std::vector<float> values;
  std::optional<io::mapped_floats> mapped;  // a float32 absolute output: mapped, its pages read as judged
  std::int64_t m = 0, n = 0, stride = 0;
  kernels::output_view view() { return {mapped ? mapped->data() : values.data(), m, n, stride}; }
};
judged_output read_judged_output(const std::string& path, const exact::problem& p, const kernels::contract& c);

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

// The same judgement as references_for then judge_output, of a bundle read by
// bundle::load_bundle_inputs, without ever holding its whole reference: the output is
// judged in blocks of rows, each block's reference.npy rows read and checked (-inf outside the
// windows), and the reference, its magnitude and a modelled contract's centre computed for that
// block only (the centre's rows chosen once over the whole output: runner::centre_rows). Where
// the bundle's digest proves reference.npy (`b.trusted`), its values are taken as they are and
// only the magnitude (and the elements a non-finite input touches under --relu fmax) is computed;
// else the keeps-NaN reference of each block is computed and compared with it. A paged bundle is
// judged the same way (its reference computed from the cache; no stored values reused). The
// diagnosis then computes the rows it samples (diagnose::rows_needed) again.
compare::judgement judge_in_blocks(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                                   const kernels::contract& c, kernels::output_view output,
                                   std::optional<kernels::output_view> repeat, bool diagnose, unsigned threads);

// "OUT: FAIL (case under contract)", the metrics, one line per finding, the notes.
void print_judgement(const std::string& shown, const compare::judgement& j, const std::string& case_name,
                     const kernels::contract& c);

}  // namespace mqa::cli
