#include "npy.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xnpy.hpp>

#include "../input_error.hpp"
#include "atomic_file.hpp"
#include "input_file.hpp"

namespace mqa::io {
namespace {

struct dtype_name {
  std::string_view typestring;
  std::string_view name;
};
constexpr std::array<dtype_name, 13> kDtypes{{{"|u1", "uint8"},
                                              {"<u2", "uint16"},
                                              {"<V2", "ml_dtypes bfloat16 (void 2)"},
                                              {"|V2", "ml_dtypes bfloat16 (void 2)"},
                                              {"<i4", "int32"},
                                              {"<u4", "uint32"},
                                              {"<f4", "float32"},
                                              {"<f8", "float64"},
                                              {"|i1", "int8"},
                                              {"<i8", "int64"},
                                              {"<u8", "uint64"},
                                              {"<f2", "float16"},
                                              {"|b1", "bool"}}};

constexpr std::string_view kAccepted = "uint8, uint16, int32, uint32, float32, float64, bfloat16, little-endian";

std::string dtype_of(std::string_view typestring) {
  for (const auto& d : kDtypes)
    if (d.typestring == typestring) return std::string(d.name);
  return fmt::format("'{}'", typestring);
}

template <class T>
std::string_view typestring_of() {
  if constexpr (std::is_same_v<T, std::uint8_t>) return "|u1";
  if constexpr (std::is_same_v<T, std::uint16_t>) return "<u2";
  if constexpr (std::is_same_v<T, std::int32_t>) return "<i4";
  if constexpr (std::is_same_v<T, std::uint32_t>) return "<u4";
  if constexpr (std::is_same_v<T, std::uint64_t>) return "<u8";
  if constexpr (std::is_same_v<T, std::int64_t>) return "<i8";
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

constexpr std::string_view kHeaderExample = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";

// The file, its preamble and header as numpy.lib.format reads them, and the data's length.
checked_header check_header(const std::filesystem::path& file) {
  const std::uintmax_t size = require_regular_file(file, "a regular .npy file");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open the file for reading");

  std::array<unsigned char, 8> preamble{};
  if (size < preamble.size() || !in.read(reinterpret_cast<char*>(preamble.data()), preamble.size()))
    fail(file, "not an .npy file: shorter than the 8-byte preamble");
  constexpr std::array<unsigned char, 6> kMagic{0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (!std::equal(kMagic.begin(), kMagic.end(), preamble.begin()))
    fail(file, "not an .npy file: the magic string \\x93NUMPY is missing");
  const unsigned major = preamble[6], minor = preamble[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(file, fmt::format("unsupported .npy version {}.{} (accepted: 1.0, 2.0, 3.0)", major, minor));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  std::array<unsigned char, 4> length_le{};
  if (!in.read(reinterpret_cast<char*>(length_le.data()), static_cast<std::streamsize>(length_bytes)))
    fail(file, "truncated .npy header");
  std::uintmax_t header_length = 0;
  for (std::size_t i = length_bytes; i-- > 0;) header_length = (header_length << 8) | length_le[i];
  const std::uintmax_t data_offset = preamble.size() + length_bytes + header_length;
  if (header_length == 0 || data_offset > size) fail(file, "truncated .npy header");
  if (header_length > kMaxNpyHeaderLength)
    fail(file, fmt::format("malformed .npy header: {} bytes long; NumPy reads headers of at most {}", header_length,
                           kMaxNpyHeaderLength));
  std::string text(header_length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_length));

  checked_header result;
  result.data_offset = data_offset;
  try {
    result.header = parse_npy_header(text);
  } catch (const npy_header_syntax& e) {
    fail(file, fmt::format("malformed .npy header: {} (accepted: a NumPy header such as {})", e.what(), kHeaderExample));
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

namespace {

// The data of a checked file whose elements are sizeof(T) bytes, row-major.
template <class T>
xt::xarray<T> read_data(const std::filesystem::path& file, const checked_header& checked) {
  // Fortran order stores the array with its axes reversed, row-major: read that, then transpose.
  std::vector<std::size_t> stored_shape = checked.header.shape;
  if (checked.header.fortran_order) std::reverse(stored_shape.begin(), stored_shape.end());
  xt::xarray<T> stored = xt::xarray<T>::from_shape(stored_shape);
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(checked.data_offset));
  if (!in.read(reinterpret_cast<char*>(stored.data()), static_cast<std::streamsize>(stored.size() * sizeof(T))))
    fail(file, "cannot read the array's data");
  if (!checked.header.fortran_order || stored.dimension() < 2) return stored;
  xt::xarray<T> row_major = xt::transpose(stored);
  return row_major;
}

}  // namespace

template <class T>
xt::xarray<T> read_npy(const std::filesystem::path& file) {
  static_assert(std::endian::native == std::endian::little, "the accepted dtypes are little-endian");
  const checked_header checked = check_header(file);
  if (checked.header.typestring != typestring_of<T>())
    fail(file, fmt::format("dtype is {}, expected {}", dtype_of(checked.header.typestring),
                           dtype_of(typestring_of<T>())));
  return read_data<T>(file, checked);
}

bool is_bfloat16_typestring(std::string_view typestring) {
  return typestring == "<u2" || typestring == "<V2" || typestring == "|V2";
}

xt::xarray<float> read_bfloat16_npy(const std::filesystem::path& file) {
  const checked_header checked = check_header(file);
  if (!is_bfloat16_typestring(checked.header.typestring))
    fail(file, fmt::format("dtype is {}, expected bfloat16 bits (uint16 '<u2', or ml_dtypes' bfloat16, which np.save "
                           "writes as '<V2')",
                           dtype_of(checked.header.typestring)));
  const xt::xarray<std::uint16_t> bits = read_data<std::uint16_t>(file, checked);
  xt::xarray<float> values = xt::xarray<float>::from_shape(bits.shape());
  for (std::size_t i = 0; i < bits.size(); ++i)
    values.data()[i] = std::bit_cast<float>(static_cast<std::uint32_t>(bits.data()[i]) << 16);
  return values;
}

template <class T>
std::vector<T> read_npy_vector(const std::filesystem::path& file) {
  const checked_header checked = check_header(file);
  if (checked.header.typestring != typestring_of<T>())
    fail(file, fmt::format("dtype is {}, expected {}", dtype_of(checked.header.typestring),
                           dtype_of(typestring_of<T>())));
  if (checked.header.fortran_order && checked.header.shape.size() >= 2) {
    const xt::xarray<T> array = read_npy<T>(file);
    return std::vector<T>(array.begin(), array.end());
  }
  std::size_t size = 1;
  for (const std::size_t extent : checked.header.shape) size *= extent;
  std::vector<T> values(size);
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(checked.data_offset));
  if (!in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(size * sizeof(T))))
    fail(file, "cannot read the array's data");
  return values;
}

std::optional<mapped_floats> mapped_floats::map(const std::filesystem::path& file) {
  const checked_header checked = check_header(file);
  if (!mappable(checked.header)) throw std::logic_error("mapped_floats: a C-order float32 .npy only");
  // NumPy pads the header so that the data starts 64-byte aligned; another writer's offset that is
  // not a multiple of 4 would leave every float misaligned: such a file is read instead.
  if (checked.data_offset % alignof(float) != 0) return std::nullopt;
  mapped_floats m;
  m.size_ = 1;
  for (const std::size_t extent : checked.header.shape) m.size_ *= extent;
  m.mapping_bytes_ = static_cast<std::size_t>(checked.data_offset) + m.size_ * sizeof(float);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  void* at = ::mmap(nullptr, m.mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (at == MAP_FAILED) return std::nullopt;
  m.mapping_ = at;
  m.values_ = reinterpret_cast<float*>(static_cast<char*>(at) + checked.data_offset);
  return m;
}

mapped_floats::~mapped_floats() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
}

mapped_floats& mapped_floats::operator=(mapped_floats&& other) noexcept {
  if (this != &other) {
    if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = other.mapping_bytes_;
    size_ = other.size_;
    values_ = std::exchange(other.values_, nullptr);
  }
  return *this;
}

mapped_floats::mapped_floats(mapped_floats&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(other.mapping_bytes_),
      size_(other.size_),
      values_(std::exchange(other.values_, nullptr)) {}

template <class T>
void read_npy_rows(const std::filesystem::path& file, std::int64_t first, std::int64_t count, std::span<T> out) {
  const checked_header checked = check_header(file);
  if (checked.header.typestring != typestring_of<T>() || checked.header.shape.size() != 2 ||
      checked.header.fortran_order || first < 0 || count < 0 ||
      static_cast<std::size_t>(first + count) > checked.header.shape[0] ||
      out.size() != static_cast<std::size_t>(count) * checked.header.shape[1])
    throw std::logic_error(fmt::format("read_npy_rows: rows [{}, {}) of {} do not fit the request", first, first + count,
                                       describe(checked.header)));
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(checked.data_offset + static_cast<std::uintmax_t>(first) *
                                                                   checked.header.shape[1] * sizeof(T)));
  if (!in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(T))))
    fail(file, "cannot read the array's data");
}

template <class T>
void write_npy_stream(std::ostream& out, const std::vector<std::size_t>& shape, const npy_producer<T>& produce) {
  static_assert(std::endian::native == std::endian::little, "the accepted dtypes are little-endian");
  std::size_t expected = 1;
  for (const std::size_t extent : shape) expected *= extent;
  xt::detail::write_header(out, std::string(typestring_of<T>()), false, shape);
  std::size_t written = 0;
  produce([&](std::span<const T> values) {
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size_bytes()));
    written += values.size();
  });
  if (written != expected)
    throw std::logic_error(fmt::format("write_npy_stream: {} values for a shape of {}", written, expected));
}

template <class T>
void write_npy(const output_file& file, const xt::xarray<T>& array) {
  write_atomically(file, [&](std::ostream& out) { xt::detail::dump_npy_stream(out, array); });
}

#define MQA_NPY_INSTANTIATE(T)                                                                         \
  template xt::xarray<T> read_npy<T>(const std::filesystem::path&);                                  \
  template std::vector<T> read_npy_vector<T>(const std::filesystem::path&);                          \
  template void read_npy_rows<T>(const std::filesystem::path&, std::int64_t, std::int64_t, std::span<T>); \
  template void write_npy_stream<T>(std::ostream&, const std::vector<std::size_t>&, const npy_producer<T>&); \
  template void write_npy<T>(const output_file&, const xt::xarray<T>&);
MQA_NPY_INSTANTIATE(std::uint8_t)
MQA_NPY_INSTANTIATE(std::uint16_t)
MQA_NPY_INSTANTIATE(std::int32_t)
MQA_NPY_INSTANTIATE(std::uint32_t)
MQA_NPY_INSTANTIATE(std::uint64_t)
MQA_NPY_INSTANTIATE(std::int64_t)
MQA_NPY_INSTANTIATE(float)
MQA_NPY_INSTANTIATE(double)
#undef MQA_NPY_INSTANTIATE

}  // namespace mqa::io
