// .npy files through xtensor's reader and writer, behind checks that turn every malformed,
// truncated or mistyped file into one input_error naming the file, what was found and what is
// accepted (xtensor alone reads past a truncated file and allocates whatever a header claims).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

namespace mqa::io {

struct npy_header {
  std::string typestring;  // e.g. "<f4", "|u1"
  std::vector<std::size_t> shape;
  bool fortran_order = false;
};

// Reads and checks the header only (the data's length is checked against it).
npy_header read_npy_header(const std::filesystem::path& file);

// T is one of std::uint8_t, std::int32_t, std::uint32_t, std::uint64_t, float, double. The result is row-major.
template <class T>
xt::xarray<T> read_npy(const std::filesystem::path& file);

// Writes through a temporary file in the same folder and renames it: a reader never sees half
// a file, and a failure leaves nothing behind.
template <class T>
void write_npy(const std::filesystem::path& file, const xt::xarray<T>& array);

// "float32 [3, 4]" style description, for messages.
std::string describe(const npy_header& header);

}  // namespace mqa::io
