#include "kernel_output.hpp"

#include <fmt/core.h>

#include <bit>

#include "validator/compare/comparator.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"

namespace mqa::external {

void write_poisoned_output(const std::filesystem::path& file, std::int64_t m, std::int64_t stride) {
  xt::xarray<float> poison = xt::xarray<float>::from_shape({static_cast<std::size_t>(m), static_cast<std::size_t>(stride)});
  poison.fill(std::bit_cast<float>(compare::kPoisonBits));
  io::write_npy(file, poison);
}

kernel_output read_kernel_output(const std::filesystem::path& file, std::int64_t m, std::int64_t n) {
  const io::npy_header header = io::read_npy_header(file);
  if (header.typestring != "<f4" || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != m ||
      static_cast<std::int64_t>(header.shape[1]) < n)
    throw input_error(fmt::format("{}: expected float32 [{}, S] with S >= {} (the case's m and n), found {}",
                                  file.string(), m, n, io::describe(header)));
  kernel_output out;
  out.values = io::read_npy<float>(file);
  out.m = m;
  out.n = n;
  out.stride = static_cast<std::int64_t>(header.shape[1]);
  return out;
}

}  // namespace mqa::external
