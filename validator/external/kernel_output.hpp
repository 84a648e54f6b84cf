// The file an adapter writes a kernel's logits to (docs/protocol.md): float32 [m, S], S >= n,
// C order. mqacheck writes it first, S the runner's padded stride, every element the poison, so
// that an adapter whose kernel fills a given buffer in place shows what it never stored
// (`unwritten`) and whether it honoured the stride.
#pragma once

#include <cstdint>
#include <filesystem>
#include <xtensor/xarray.hpp>

#include "kernels/contract.hpp"
#include "kernels/variant.hpp"

namespace mqa::external {

// Through a temporary name and a rename, like every file mqacheck writes. bf16 logits:
// uint16 [m, stride] of bfloat16 bits, the poison 0x7FDE.
void write_poisoned_output(const std::filesystem::path& file, std::int64_t m, std::int64_t stride,
                           kernels::logits_precision logits = kernels::logits_precision::fp32);

struct kernel_output {
  xt::xarray<float> values;  // [m, stride], row-major
  std::int64_t m = 0, n = 0, stride = 0;
  kernels::output_view view() { return {values.data(), m, n, stride}; }
};

// What the adapter left in `file`, checked: an .npy of float32 (bf16 logits: uint16 bfloat16 bits or
// ml_dtypes' bfloat16, widened), two dimensions, m rows, at least n columns. Anything else throws
// input_error naming the file, what it holds and what is accepted.
kernel_output read_kernel_output(const std::filesystem::path& file, std::int64_t m, std::int64_t n,
                                 kernels::logits_precision logits = kernels::logits_precision::fp32);

}  // namespace mqa::external
