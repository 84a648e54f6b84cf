#include "staging_folder.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <string_view>
#include <system_error>

#include "interrupt.hpp"
#include "validator/input_error.hpp"

namespace mqa::io {
namespace {

namespace fs = std::filesystem;

// A hidden sibling of `target` that no other writer in this or another process uses.
fs::path sibling(const fs::path& target, std::string_view purpose) {
  static std::atomic<unsigned> counter{0};
  return target.parent_path() /
         fmt::format(".{}.{}-{}-{}", target.filename().string(), purpose, ::getpid(), counter++);
}

[[noreturn]] void fail(const fs::path& shown, std::string_view what, const std::error_code& ec) {
  throw input_error(fmt::format("{}: {} ({})", shown.string(), what, ec.message()));
}

}  // namespace

staging_folder::staging_folder(const fs::path& target, const fs::path& shown)
    : target_(target), shown_(shown), path_(sibling(target, "partial")),
      on_interrupt_(std::make_unique<removed_on_interrupt>(path_)) {
  std::error_code ec;
  if (!fs::create_directory(path_, ec)) {
    if (!ec) ec = std::make_error_code(std::errc::file_exists);
    fail(shown_, "cannot create a folder next to it", ec);
  }
}

staging_folder::~staging_folder() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void staging_folder::commit() {
  std::error_code ec;
  fs::rename(path_, target_, ec);
  if (ec) fail(shown_, "cannot rename the new folder into place", ec);
  committed_ = true;
}

void staging_folder::commit_replacing() {
  const fs::path old = sibling(target_, "old");
  std::unique_ptr<removed_on_interrupt> old_on_interrupt;  // once the new folder is in place
  {
    const interrupts_held held;
    std::error_code ec;
    fs::rename(target_, old, ec);
    if (ec) fail(shown_, "cannot move the existing folder aside", ec);
    fs::rename(path_, target_, ec);
    if (ec) {
      std::error_code back;
      fs::rename(old, target_, back);  // the old folder back where it was
      if (back)  // never lose it: say where it is
        fail(shown_, fmt::format("cannot rename the new folder into place, nor the old one back; it is kept as {}",
                                 old.string()), ec);
      fail(shown_, "cannot rename the new folder into place", ec);
    }
    committed_ = true;
    old_on_interrupt = std::make_unique<removed_on_interrupt>(old);
  }
  std::error_code ignored;
  fs::remove_all(old, ignored);
}

}  // namespace mqa::io
