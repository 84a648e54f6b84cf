#include "input_file.hpp"

#include "output_path.hpp"
#include "../input_error.hpp"

#include <fmt/core.h>

namespace mqa::io {

std::uintmax_t require_regular_file(const std::filesystem::path& file, std::string_view accepted) {
  if (file.empty()) throw input_error(fmt::format("an input file's path is empty (accepted: {})", accepted));
  std::error_code ec;
  const std::filesystem::file_type type = std::filesystem::status(file, ec).type();
  if (type == std::filesystem::file_type::not_found) {
    // A link whose target is gone exists itself: "no such file" would contradict what `ls` shows.
    const bool dangling = std::filesystem::is_symlink(std::filesystem::symlink_status(file, ec));
    throw input_error(fmt::format("{}: {} (accepted: {})", file.string(),
                                  dangling ? "is a symbolic link to a missing file" : "no such file", accepted));
  }
  if (type == std::filesystem::file_type::none)  // status() failed: a folder on the way cannot be searched
    throw input_error(fmt::format("{}: cannot be examined ({}; accepted: {})", file.string(), ec.message(), accepted));
  if (type != std::filesystem::file_type::regular)
    throw input_error(fmt::format("{}: is {}, not a file (accepted: {})", file.string(), describe(type), accepted));
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec)
    throw input_error(
        fmt::format("{}: cannot read the file's size ({}; accepted: {})", file.string(), ec.message(), accepted));
  return size;
}

}  // namespace mqa::io
