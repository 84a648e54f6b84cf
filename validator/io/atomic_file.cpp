#include "atomic_file.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include "validator/input_error.hpp"

namespace mqa::io {

void write_through_temporary(const std::filesystem::path& file,
                             const std::function<void(const std::filesystem::path& temporary)>& write) {
  const std::filesystem::path temporary =
      file.parent_path() / fmt::format(".{}.{}.partial", file.filename().string(), ::getpid());
  std::string why;
  try {
    write(temporary);
    std::error_code ec;
    std::filesystem::rename(temporary, file, ec);
    if (ec) why = ec.message();
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (why.empty()) return;
  std::error_code ignored;
  std::filesystem::remove(temporary, ignored);
  throw input_error(fmt::format("{}: cannot write the file ({})", file.string(), why));
}

}  // namespace mqa::io
