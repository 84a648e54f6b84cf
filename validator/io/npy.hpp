// .npy files: every malformed, truncated or mistyped file is one input_error naming the file, what
// was found and what is accepted. The header is parsed as NumPy parses it (npy_header.hpp; xtensor
// alone is lax there, reads past a truncated file and allocates whatever a header claims); the
// data is read here; writing goes through xtensor's writer into atomic_file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <xtensor/xarray.hpp>

#include "npy_header.hpp"
#include "output_path.hpp"

namespace mqa::io {

// Reads and checks the header only (the data's length is checked against it).
npy_header read_npy_header(const std::filesystem::path& file);

// T is one of std::uint8_t, std::uint16_t, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float, double. The result is
// row-major.
template <class T>
xt::xarray<T> read_npy(const std::filesystem::path& file);

// bfloat16 logits, widened to float32: uint16 holding bfloat16 bits ('<u2'), or an
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

// The header's data read straight into a vector (no intermediate array; Fortran order is
// transposed to row-major). Same checks and messages as read_npy.
template <class T>
std::vector<T> read_npy_vector(const std::filesystem::path& file);

// A C-order .npy of float32 mapped into memory (private, copy on write: the file is never
// written) instead of read: pages are read when touched, so a caller that judges a few sampled
// rows of a 2 GiB output reads those rows and not the rest. map() checks the file as
// read_npy_vector does (the same input_error for a bad one) and gives nothing where the system
// refuses the mapping (a file system without mmap, say): the caller then reads the file. A file
// truncated by another program while it is mapped ends the process with SIGBUS, as for any
// mapping; a Fortran-order file is refused with std::logic_error (callers read those).
class mapped_floats {
 public:
  static std::optional<mapped_floats> map(const std::filesystem::path& file);
  ~mapped_floats();
  mapped_floats(mapped_floats&& other) noexcept;
  mapped_floats& operator=(mapped_floats&& other) noexcept;
  mapped_floats(const mapped_floats&) = delete;
  float* data() const { return values_; }
  std::size_t size() const { return size_; }
  static bool mappable(const npy_header& header) { return header.typestring == "<f4" && !header.fortran_order; }

 private:
  mapped_floats() = default;
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0, size_ = 0;
  float* values_ = nullptr;
};

// Rows [first, first + count) of a 2-D C-order .npy of T into `out` (count * columns values), for
// judging a large array block by block. The header must have passed the caller's checks.
template <class T>
void read_npy_rows(const std::filesystem::path& file, std::int64_t first, std::int64_t count, std::span<T> out);

// Hands the data of an .npy to `put` in row-major order, piece by piece.
template <class T>
using npy_producer = std::function<void(const std::function<void(std::span<const T>)>& put)>;

// The .npy header for T and `shape`, then the data `produce` gives, written to `out` without a
// copy of the array; the number of values must be the shape's (else std::logic_error: a bug).
template <class T>
void write_npy_stream(std::ostream& out, const std::vector<std::size_t>& shape, const npy_producer<T>& produce);

// "float32 [3, 4]" style description, for messages.
std::string describe(const npy_header& header);

}  // namespace mqa::io
