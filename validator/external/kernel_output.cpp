#include "kernel_output.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "validator/compare/comparator.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::external {
namespace {

namespace fs = std::filesystem;

// The longest .npy header NumPy writes is a few hundred bytes; format 2/3 allow 4 GiB, which no
// honest output needs.
constexpr std::uintmax_t kMaxHeaderBytes = 1 << 16;

// A descriptor that is closed however the read ends.
class open_file {
 public:
  explicit open_file(int fd) : fd_(fd) {}
  ~open_file() {
    if (fd_ >= 0) ::close(fd_);
  }
  open_file(const open_file&) = delete;
  open_file& operator=(const open_file&) = delete;
  int fd() const { return fd_; }
  // The file itself, whatever now lies at the path it was opened by.
  fs::path path() const { return fs::path("/proc/self/fd") / std::to_string(fd_); }

 private:
  int fd_;
};

// The descriptor's path in io's messages becomes the name the user knows.
[[noreturn]] void rethrow_as(const input_error& e, const open_file& f, const fs::path& shown) {
  std::string message = e.what();
  const std::string anchor = f.path().string();
  for (std::size_t at = message.find(anchor); at != std::string::npos; at = message.find(anchor, at))
    message.replace(at, anchor.size(), shown.string());
  throw input_error(message);
}

// The file opened for reading, never through a link, and checked to be a regular file.
int open_regular(const fs::path& file, const fs::path& shown, struct stat& st) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP)
      throw input_error(fmt::format("{}: is a symbolic link; the output must be the file mqacheck wrote, filled in "
                                    "place or replaced by a regular file (a link to another file is refused)",
                                    shown.string()));
    throw input_error(fmt::format("{}: cannot open the output ({})", shown.string(), std::strerror(errno)));
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw input_error(fmt::format("{}: is not a regular file (a pipe, device or folder); the output must be an .npy "
                                  "file",
                                  shown.string()));
  }
  return fd;
}

}  // namespace

void write_poisoned_output(const fs::path& file, std::int64_t m, std::int64_t stride, kernels::logits_precision logits,
                           const fs::path& shown) {
  const io::output_file target{shown.empty() ? file : shown, file};
  const std::vector<std::size_t> shape{static_cast<std::size_t>(m), static_cast<std::size_t>(stride)};
  if (logits == kernels::logits_precision::bf16) {
    xt::xarray<std::uint16_t> poison = xt::xarray<std::uint16_t>::from_shape(shape);
    poison.fill(compare::kPoisonBitsBf16);
    io::write_npy(target, poison);
    return;
  }
  xt::xarray<float> poison = xt::xarray<float>::from_shape(shape);
  poison.fill(std::bit_cast<float>(compare::kPoisonBits));
  io::write_npy(target, poison);
}

std::int64_t max_output_stride(std::int64_t n) { return 2 * runner::padded_stride(n) + 4096; }

kernel_output read_kernel_output(const fs::path& file, std::int64_t m, std::int64_t n, kernels::logits_precision logits,
                                 const fs::path& shown_as) {
  const fs::path& shown = shown_as.empty() ? file : shown_as;
  const bool bf16 = logits == kernels::logits_precision::bf16;
  struct stat st {};
  const open_file f(open_regular(file, shown, st));
  try {
    const io::npy_header header = io::read_npy_header(f.path());
    const bool dtype_ok = bf16 ? io::is_bfloat16_typestring(header.typestring) : header.typestring == "<f4";
    const std::string expected = fmt::format("{} [{}, S] with S >= {} (the case's m and n)",
                                             bf16 ? "bfloat16 (uint16 bits, or ml_dtypes' bfloat16)" : "float32", m, n);
    if (!dtype_ok || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != m ||
        static_cast<std::int64_t>(header.shape[1]) < n)
      throw input_error(fmt::format("{}: expected {}, found {}", shown.string(), expected, io::describe(header)));
    const auto stride = static_cast<std::int64_t>(header.shape[1]);
    if (stride > max_output_stride(n))
      throw input_error(fmt::format("{}: expected {} and S <= {}, found {}: a row stride that wide is not read (the "
                                    "output is read whole)",
                                    shown.string(), expected, max_output_stride(n), io::describe(header)));
    const std::uintmax_t data_bytes = static_cast<std::uintmax_t>(m) * static_cast<std::uintmax_t>(stride) * (bf16 ? 2 : 4);
    if (static_cast<std::uintmax_t>(st.st_size) > data_bytes + kMaxHeaderBytes)
      throw input_error(fmt::format("{}: holds {} bytes, more than {} [{}, {}] needs", shown.string(), st.st_size,
                                    bf16 ? "bfloat16" : "float32", m, stride));
    kernel_output out;
    out.values = bf16 ? io::read_bfloat16_npy(f.path()) : io::read_npy<float>(f.path());
    out.m = m;
    out.n = n;
    out.stride = stride;
    return out;
  } catch (const input_error& e) {
    rethrow_as(e, f, shown);
  }
}

compare::read_indices read_kernel_indices(const fs::path& file, std::int64_t m, std::int64_t k,
                                          const fs::path& shown_as) {
  const fs::path& shown = shown_as.empty() ? file : shown_as;
  struct stat st {};
  const open_file f(open_regular(file, shown, st));
  try {
    const std::uintmax_t data_bytes = static_cast<std::uintmax_t>(m) * static_cast<std::uintmax_t>(k) * 8;
    if (static_cast<std::uintmax_t>(st.st_size) > data_bytes + kMaxHeaderBytes)
      throw input_error(fmt::format("{}: holds {} bytes, more than int64 [{}, {}] top-k indices need", shown.string(),
                                    st.st_size, m, k));
    return compare::read_topk_indices(f.path(), m);
  } catch (const input_error& e) {
    rethrow_as(e, f, shown);
  }
}

std::optional<std::string> changed_since_read(const fs::path& file, const kernel_output& judged,
                                              kernels::logits_precision logits, const fs::path& shown) {
  try {
    const kernel_output now = read_kernel_output(file, judged.m, judged.n, logits, shown);
    if (now.stride != judged.stride)
      return fmt::format("its row stride is now {}, {} when it was judged", now.stride, judged.stride);
    if (std::memcmp(now.values.data(), judged.values.data(), judged.values.size() * sizeof(float)) != 0)
      return std::string("its values differ from those judged");
    return std::nullopt;
  } catch (const input_error& e) {
    return std::string(e.what());
  }
}

}  // namespace mqa::external
