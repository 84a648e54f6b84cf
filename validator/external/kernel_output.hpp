// The file an adapter writes a kernel's logits to (docs/protocol.md): float32 [m, S], S >= n,
// C order. mqacheck writes it first, S the runner's padded stride, every element the poison, so
// that an adapter whose kernel fills a given buffer in place shows what it never stored
// (`unwritten`) and whether it honoured the stride.
//
// The adapter is not trusted with the file: it is opened without following a link (an output that
// is a link to another file is refused, whatever that file holds), it must be a regular file, its
// size is bounded by the case before anything is read, and it is read again after the judgement
// to prove it did not change once the adapter had answered (a kernel still writing after it
// reported done, or a process left behind, would otherwise be judged on half its output).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <xtensor/xarray.hpp>

#include "kernels/contract.hpp"
#include "kernels/variant.hpp"
#include "validator/compare/topk_indices.hpp"

namespace mqa::external {

// Through a temporary created new (never through a link) and a rename, like every file mqacheck
// writes. bf16 logits: uint16 [m, stride] of bfloat16 bits, the poison 0x7FDE. `file` is where
// the bytes go (an anchored path, scratch.hpp), `shown` what messages name.
void write_poisoned_output(const std::filesystem::path& file, std::int64_t m, std::int64_t stride,
                           kernels::logits_precision logits = kernels::logits_precision::fp32,
                           const std::filesystem::path& shown = {});

struct kernel_output {
  xt::xarray<float> values;  // [m, stride], row-major
  std::int64_t m = 0, n = 0, stride = 0;
  kernels::output_view view() { return {values.data(), m, n, stride}; }
};

// The widest row an output may have, for a case of n columns: twice the padded stride mqacheck
// writes, plus 4096 columns (a kernel's own alignment of a buffer it allocates). An output is read
// whole into memory, so a larger one is that launch's error rather than mqacheck's end.
std::int64_t max_output_stride(std::int64_t n);

// What the adapter left in `file`, checked: a regular file (not a link, a pipe or a device), an
// .npy of float32 (bf16 logits: uint16 bfloat16 bits or ml_dtypes' bfloat16, widened), two
// dimensions, m rows, n <= S <= max_output_stride(n) columns, no bytes past its data. Anything
// else throws input_error naming `shown` (default: file), what it holds and what is accepted.
kernel_output read_kernel_output(const std::filesystem::path& file, std::int64_t m, std::int64_t n,
                                 kernels::logits_precision logits = kernels::logits_precision::fp32,
                                 const std::filesystem::path& shown = {});

// A top-k kernel's indices the adapter left in `file` (an anchored path), checked as an output is:
// opened without following a link, a regular file, no more bytes than int64 [m, k] needs (k the
// k asked), then read as compare::read_topk_indices reads them. Errors name `shown`.
compare::read_indices read_kernel_indices(const std::filesystem::path& file, std::int64_t m, std::int64_t k,
                                          const std::filesystem::path& shown = {});

// Why `file` no longer holds exactly what was read into `judged` (another file now at the path, a
// different shape, different bytes, gone), or nullopt when it does.
std::optional<std::string> changed_since_read(const std::filesystem::path& file, const kernel_output& judged,
                                              kernels::logits_precision logits,
                                              const std::filesystem::path& shown = {});

}  // namespace mqa::external
