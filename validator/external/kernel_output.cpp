#include "kernel_output.hpp"

#include <fmt/core.h>

#include <bit>

#include "validator/compare/comparator.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"

namespace mqa::external {

void write_poisoned_output(const std::filesystem::path& file, std::int64_t m, std::int64_t stride,
                           kernels::logits_precision logits) {
  const std::vector<std::size_t> shape{static_cast<std::size_t>(m), static_cast<std::size_t>(stride)};
  if (logits == kernels::logits_precision::bf16) {
    xt::xarray<std::uint16_t> poison = xt::xarray<std::uint16_t>::from_shape(shape);
    poison.fill(compare::kPoisonBitsBf16);
    io::write_npy(file, poison);
    return;
  }
  xt::xarray<float> poison = xt::xarray<float>::from_shape(shape);
  poison.fill(std::bit_cast<float>(compare::kPoisonBits));
  io::write_npy(file, poison);
}

kernel_output read_kernel_output(const std::filesystem::path& file, std::int64_t m, std::int64_t n,
                                 kernels::logits_precision logits) {
  const bool bf16 = logits == kernels::logits_precision::bf16;
  const io::npy_header header = io::read_npy_header(file);
  const bool dtype_ok = bf16 ? io::is_bfloat16_typestring(header.typestring) : header.typestring == "<f4";
  if (!dtype_ok || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != m ||
      static_cast<std::int64_t>(header.shape[1]) < n)
    throw input_error(fmt::format("{}: expected {} [{}, S] with S >= {} (the case's m and n), found {}", file.string(),
                                  bf16 ? "bfloat16 (uint16 bits, or ml_dtypes' bfloat16)" : "float32", m, n,
                                  io::describe(header)));
  kernel_output out;
  out.values = bf16 ? io::read_bfloat16_npy(file) : io::read_npy<float>(file);
  out.m = m;
  out.n = n;
  out.stride = static_cast<std::int64_t>(header.shape[1]);
  return out;
}

}  // namespace mqa::external
