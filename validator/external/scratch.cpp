#include "scratch.hpp"

#include <fmt/core.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "validator/input_error.hpp"

namespace mqa::external {
namespace {

namespace fs = std::filesystem;

bool roomy_memory_folder(const fs::path& folder, std::uintmax_t bytes_needed) {
  struct statvfs s {};
  if (::access(folder.c_str(), W_OK | X_OK) != 0 || ::statvfs(folder.c_str(), &s) != 0) return false;
  return static_cast<std::uintmax_t>(s.f_bavail) * s.f_frsize >= bytes_needed;
}

fs::path parent_folder(std::uintmax_t bytes_needed) {
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && *tmpdir) return fs::absolute(tmpdir);
  if (roomy_memory_folder("/dev/shm", bytes_needed)) return "/dev/shm";
  std::error_code ec;
  const fs::path system = fs::temp_directory_path(ec);
  return ec ? fs::path("/tmp") : system;
}

}  // namespace

scratch_folder::scratch_folder(std::uintmax_t bytes_needed) {
  const fs::path parent = parent_folder(bytes_needed);
  std::string name = (parent / "mqacheck-run-XXXXXX").string();
  if (!::mkdtemp(name.data()))
    throw input_error(fmt::format("{}: cannot create a scratch folder for the adapter ({}); set TMPDIR to a writable "
                                  "folder with room for a case's bundle and outputs",
                                  parent.string(), std::strerror(errno)));
  path_ = name;
}

scratch_folder::~scratch_folder() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

}  // namespace mqa::external
