#include "scratch.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

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

fs::path descriptor_path(int fd) { return fs::path("/proc/self/fd") / std::to_string(fd); }

// Everything inside the folder `fd` refers to; a link is removed, never followed.
void empty_folder(int fd) noexcept {
  std::error_code ignored;
  const fs::path anchor = descriptor_path(fd);
  std::vector<fs::path> entries;
  for (fs::directory_iterator it(anchor, ignored), end; !ignored && it != end; it.increment(ignored))
    entries.push_back(anchor / it->path().filename());
  for (const auto& e : entries) fs::remove_all(e, ignored);
}

}  // namespace

anchored_folder::~anchored_folder() {
  if (fd_ >= 0) ::close(fd_);
}

anchored_folder::anchored_folder(anchored_folder&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

anchored_folder& anchored_folder::operator=(anchored_folder&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

fs::path anchored_folder::anchored(std::string_view name) const { return descriptor_path(fd_) / name; }
fs::path anchored_folder::anchor() const { return descriptor_path(fd_); }

scratch_folder::scratch_folder(std::uintmax_t bytes_needed) {
  const fs::path parent = parent_folder(bytes_needed);
  std::string name = (parent / "mqacheck-run-XXXXXX").string();
  if (!::mkdtemp(name.data()))
    throw input_error(fmt::format("{}: cannot create a scratch folder for the adapter ({}); set TMPDIR to a writable "
                                  "folder with room for a case's bundle and outputs",
                                  parent.string(), std::strerror(errno)));
  const int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    ::rmdir(name.c_str());
    throw input_error(fmt::format("{}: cannot open the scratch folder just created ({})", name, std::strerror(error)));
  }
  root_ = anchored_folder(fs::path(name), fd);
  on_interrupt_ = std::make_unique<io::removed_on_interrupt>(root_.path());
}

scratch_folder::~scratch_folder() {
  empty_folder(root_.descriptor());
  // Only an empty folder goes: if something else now lies at the path, it is not removed.
  ::rmdir(root_.path().c_str());
}

anchored_folder scratch_folder::make_folder(std::string_view stem) const {
  std::string name = (root_.anchor() / fmt::format("{}-XXXXXX", stem)).string();
  if (!::mkdtemp(name.data()))
    throw input_error(fmt::format("{}: cannot create a folder for the adapter ({})", (path() / stem).string(),
                                  std::strerror(errno)));
  const std::string leaf = fs::path(name).filename().string();
  const int fd = ::openat(root_.descriptor(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    throw input_error(fmt::format("{}: the folder just created cannot be opened as a folder ({}): something replaced "
                                  "it",
                                  (path() / leaf).string(), std::strerror(errno)));
  return anchored_folder(path() / leaf, fd);
}

void scratch_folder::remove(anchored_folder& folder) const noexcept {
  if (folder.descriptor() < 0) return;
  empty_folder(folder.descriptor());
  const std::string leaf = folder.path().filename().string();
  folder = anchored_folder();
  ::unlinkat(root_.descriptor(), leaf.c_str(), AT_REMOVEDIR);  // fails, harmlessly, unless an empty folder
}

}  // namespace mqa::external
