// What `check` and `shrink` both do with an output file: read it as the bundle's shape demands
// (a contract's own forms: api/output.hpp), and print the judgement (validator/judge) for a person.
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

// "OUT: FAIL (case under contract)", the metrics, one line per finding, the notes.
void print_judgement(const std::string& shown, const compare::judgement& j, const std::string& case_name,
                     const kernels::contract& c);

}  // namespace mqa::cli
