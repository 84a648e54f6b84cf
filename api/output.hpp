// A kernel's output as its contract declares it, from a file or from memory: float32, or bfloat16
// under --logits-dtype bf16 (widened); [m, S >= n] with absolute columns, or [m, S >= the longest
// window] with relative ones (row i's key ks[i] + c at column c), mapped onto the absolute [m, n]
// image the comparator judges (-inf outside the windows, which a relative contract leaves
// undefined: dont_care). A float32 absolute output is judged where it lies: a file is mapped, an
// array in memory borrowed (any row stride), never copied. Anything else is an input_error naming
// the output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/contract.hpp"
#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"
#include "validator/io/npy.hpp"

namespace mqa::api {

// A 2-D array in memory, rows apart by row_stride elements, columns adjacent.
struct output_array {
  enum class element { float32, bfloat16 };  // bfloat16: its uint16 bits
  void* data = nullptr;  // read only; not const as DLPack's and the judge's views are not
  element type = element::float32;
  std::int64_t rows = 0, cols = 0, row_stride = 0;
  int device = -1;  // the GPU whose memory holds it (the runtime's index); -1: host memory
};

struct judged_output {
  std::vector<float> values;
  std::optional<io::mapped_floats> mapped;  // a float32 absolute file: mapped, its pages read as judged
  float* borrowed = nullptr;                // a float32 absolute array in memory: the caller's
  std::int64_t m = 0, n = 0, stride = 0;
  kernels::output_view view() {
    return {borrowed ? borrowed : mapped ? mapped->data() : values.data(), m, n, stride};
  }
};

judged_output read_judged_output(const std::string& path, const exact::problem& p, const kernels::contract& c);

// Throws the input_error judged_from_memory would where `a` is not the contract's output array
// (dtype, rows, width, rows that overlap or run backwards): a judge that copies the array first
// (from a GPU) asks before sizing the copy.
void check_output_array(const output_array& a, const std::string& shown, const exact::problem& p,
                        const kernels::contract& c);

// `shown` names the array in a message ("logits"). The array must outlive the judged_output.
judged_output judged_from_memory(const output_array& a, const std::string& shown, const exact::problem& p,
                                 const kernels::contract& c);

}  // namespace mqa::api
