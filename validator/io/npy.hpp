// .npy files: every malformed, truncated or mistyped file is one input_error naming the file, what
// was found and what is accepted. The header is parsed as NumPy parses it (npy_header.hpp; xtensor
// alone is lax there, reads past a truncated file and allocates whatever a header claims); the
// data is read here; writing goes through xtensor's writer into atomic_file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>
#include <xtensor/xarray.hpp>

#include "npy_header.hpp"
#include "output_path.hpp"

namespace mqa::io {

// Reads and checks the header only (the data's length is checked against it).
npy_header read_npy_header(const std::filesystem::path& file);

// T is one of std::uint8_t, std::uint16_t, std::int32_t, std::uint32_t, std::uint64_t, float, double. The result is
// row-major.
template <class T>
xt::xarray<T> read_npy(const std::filesystem::path& file);

// bfloat16 logits (issue 14), widened to float32: uint16 holding bfloat16 bits ('<u2'), or an
// ml_dtypes bfloat16 array as np.save writes it. NumPy saves a legacy user dtype by its dtype.str,
// which for ml_dtypes.bfloat16 is '<V2' (kind 'V', void, 2 bytes: ml_dtypes/ml_dtypes#41);
// '|V2', the other spelling of a 2-byte void, is accepted too.
xt::xarray<float> read_bfloat16_npy(const std::filesystem::path& file);
bool is_bfloat16_typestring(std::string_view typestring);

// Writes through a temporary file next to the target and renames it (atomic_file.hpp): a reader
// never sees half a file, and a failure or an interrupt leaves nothing behind.
template <class T>
void write_npy(const output_file& file, const xt::xarray<T>& array);

// The same for a path checked here with resolve_output_file (no input to protect).
template <class T>
void write_npy(const std::filesystem::path& file, const xt::xarray<T>& array) {
  write_npy(resolve_output_file("", file), array);
}

// "float32 [3, 4]" style description, for messages.
std::string describe(const npy_header& header);

}  // namespace mqa::io
