#include "npy.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <fstream>
#include <sstream>
#include <system_error>
#include <xtensor/xnpy.hpp>

#include "../input_error.hpp"
#include "atomic_file.hpp"

namespace mqa::io {
namespace {

struct dtype_name {
  std::string_view typestring;
  std::string_view name;
};
constexpr std::array<dtype_name, 10> kDtypes{{{"|u1", "uint8"},
                                              {"<i4", "int32"},
                                              {"<u4", "uint32"},
                                              {"<f4", "float32"},
                                              {"<f8", "float64"},
                                              {"|i1", "int8"},
                                              {"<i8", "int64"},
                                              {"<u8", "uint64"},
                                              {"<f2", "float16"},
                                              {"|b1", "bool"}}};

constexpr std::string_view kAccepted = "uint8, int32, uint32, float32, float64, little-endian";

std::string dtype_of(std::string_view typestring) {
  for (const auto& d : kDtypes)
    if (d.typestring == typestring) return std::string(d.name);
  return fmt::format("'{}'", typestring);
}

template <class T>
std::string_view typestring_of() {
  if constexpr (std::is_same_v<T, std::uint8_t>) return "|u1";
  if constexpr (std::is_same_v<T, std::int32_t>) return "<i4";
  if constexpr (std::is_same_v<T, std::uint32_t>) return "<u4";
  if constexpr (std::is_same_v<T, std::uint64_t>) return "<u8";
  if constexpr (std::is_same_v<T, float>) return "<f4";
  if constexpr (std::is_same_v<T, double>) return "<f8";
}

[[noreturn]] void fail(const std::filesystem::path& file, std::string_view what) {
  throw input_error(fmt::format("{}: {}", file.string(), what));
}

struct checked_header {
  npy_header header;
  std::uintmax_t data_offset = 0;
};

// The checks xtensor does not make, then xtensor's own header parser.
checked_header check_header(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) fail(file, "no such file (an .npy file was expected)");
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) fail(file, "cannot read the file size");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open the file for reading");

  std::array<unsigned char, 8> preamble{};
  if (size < preamble.size() || !in.read(reinterpret_cast<char*>(preamble.data()), preamble.size()))
    fail(file, "not an .npy file: shorter than the 8-byte preamble");
  constexpr std::array<unsigned char, 6> kMagic{0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (!std::equal(kMagic.begin(), kMagic.end(), preamble.begin()))
    fail(file, "not an .npy file: the magic string \\x93NUMPY is missing");
  const unsigned major = preamble[6];
  if (major != 1 && major != 2) fail(file, fmt::format("unsupported .npy version {} (accepted: 1.0, 2.0)", major));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  std::array<unsigned char, 4> length_le{};
  if (!in.read(reinterpret_cast<char*>(length_le.data()), static_cast<std::streamsize>(length_bytes)))
    fail(file, "truncated .npy header");
  std::uintmax_t header_length = 0;
  for (std::size_t i = length_bytes; i-- > 0;) header_length = (header_length << 8) | length_le[i];
  const std::uintmax_t data_offset = preamble.size() + length_bytes + header_length;
  if (header_length == 0 || data_offset > size) fail(file, "truncated .npy header");
  std::string text(header_length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_length));
  if (text.back() != '\n') fail(file, "malformed .npy header: it does not end with a newline");

  checked_header result;
  result.data_offset = data_offset;
  try {
    std::string type;
    xt::detail::parse_header(text, type, &result.header.fortran_order, result.header.shape);
    result.header.typestring = type;
  } catch (const std::exception& e) {
    fail(file, fmt::format("malformed .npy header ({}); accepted: a NumPy 1.0/2.0 header with dtype {}", e.what(),
                           kAccepted));
  }
  std::uintmax_t elements = 1;
  for (const std::size_t extent : result.header.shape) {
    if (extent != 0 && elements > std::numeric_limits<std::uintmax_t>::max() / 16 / extent)
      fail(file, "the .npy header declares an impossibly large shape");
    elements *= extent;
  }
  std::uintmax_t word = 0;
  for (const auto& d : kDtypes)
    if (d.typestring == result.header.typestring) word = std::stoul(std::string(d.typestring.substr(2)));
  if (word == 0)
    fail(file, fmt::format("unsupported dtype {} (accepted: {})", dtype_of(result.header.typestring), kAccepted));
  const std::uintmax_t expected = data_offset + elements * word;
  if (size < expected)
    fail(file, fmt::format("truncated: {} holds {} bytes of data, the header needs {}", describe(result.header),
                           size - data_offset, expected - data_offset));
  if (size > expected)
    fail(file, fmt::format("{} extra bytes after the {} array declared by its header", size - expected,
                           describe(result.header)));
  return result;
}

}  // namespace

std::string describe(const npy_header& header) {
  return fmt::format("{} [{}]", dtype_of(header.typestring), fmt::join(header.shape, ", "));
}

npy_header read_npy_header(const std::filesystem::path& file) { return check_header(file).header; }

template <class T>
xt::xarray<T> read_npy(const std::filesystem::path& file) {
  const checked_header checked = check_header(file);
  if (checked.header.typestring != typestring_of<T>())
    fail(file, fmt::format("dtype is {}, expected {}", dtype_of(checked.header.typestring),
                           dtype_of(typestring_of<T>())));
  std::ifstream in(file, std::ios::binary);
  try {
    xt::xarray<T> row_major = xt::load_npy<T>(in);
    return row_major;
  } catch (const std::exception& e) {
    fail(file, fmt::format("cannot read the array ({})", e.what()));
  }
}

template <class T>
void write_npy(const std::filesystem::path& file, const xt::xarray<T>& array) {
  write_through_temporary(file, [&](const std::filesystem::path& temporary) {
    xt::dump_npy(temporary.string(), array);
  });
}

#define MQA_NPY_INSTANTIATE(T)                                        \
  template xt::xarray<T> read_npy<T>(const std::filesystem::path&); \
  template void write_npy<T>(const std::filesystem::path&, const xt::xarray<T>&);
MQA_NPY_INSTANTIATE(std::uint8_t)
MQA_NPY_INSTANTIATE(std::int32_t)
MQA_NPY_INSTANTIATE(std::uint32_t)
MQA_NPY_INSTANTIATE(std::uint64_t)
MQA_NPY_INSTANTIATE(float)
MQA_NPY_INSTANTIATE(double)
#undef MQA_NPY_INSTANTIATE

}  // namespace mqa::io
