#include "atomic_file.hpp"

#include <fmt/core.h>
#include <fcntl.h>
#include <unistd.h>

#include <ext/stdio_filebuf.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "interrupt.hpp"
#include "validator/input_error.hpp"

namespace mqa::io {
namespace {

namespace fs = std::filesystem;

// A hidden sibling of `target` no other writer uses: this process's id and a counter.
fs::path temporary_for(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  return target.parent_path() / fmt::format(".{}.{}-{}.partial", target.filename().string(), ::getpid(), counter++);
}

// The temporary exists only while this object does, unless kept (renamed into place); an
// interrupt removes it too.
class temporary_file {
 public:
  explicit temporary_file(const fs::path& target) : path_(temporary_for(target)), on_interrupt_(path_) {}
  ~temporary_file() {
    if (kept_) return;
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  temporary_file(const temporary_file&) = delete;
  temporary_file& operator=(const temporary_file&) = delete;
  const fs::path& path() const { return path_; }
  void keep() { kept_ = true; }

 private:
  fs::path path_;
  removed_on_interrupt on_interrupt_;
  bool kept_ = false;
};

std::string system_reason(int error, std::string_view fallback) {
  return error != 0 ? std::string(std::strerror(error)) : std::string(fallback);
}

// Writes the temporary; returns why it failed ("" when it did not). The reason never holds the
// temporary's name: messages name the user's path. The temporary is created new (O_EXCL) and
// never through a symbolic link (O_NOFOLLOW), and written through that descriptor: its name is
// predictable, and a link planted there by another program (an adapter sharing the scratch folder,
// say) must not make mqacheck write a file elsewhere.
std::string write_temporary(const fs::path& temporary, const stream_writer& write) {
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return system_reason(errno, "cannot create the file");
  __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out | std::ios::binary);  // owns fd from here
  std::ostream out(&buffer);
  try {
    errno = 0;
    write(out);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  }
  if (!out) return system_reason(errno, "write error");  // a full buffer failed while writing
  errno = 0;
  out.flush();
  if (!out) return system_reason(errno, "write error");
  errno = 0;
  if (!buffer.close()) return system_reason(errno, "write error");
  return "";
}

[[noreturn]] void cannot_write(const output_file& file, std::string_view why) {
  throw input_error(fmt::format("{}: cannot write the file ({})", file.path.string(), why));
}

}  // namespace

void write_atomically(const output_file& file, const stream_writer& write) {
  temporary_file temporary(file.target);
  if (const std::string why = write_temporary(temporary.path(), write); !why.empty()) cannot_write(file, why);
  std::error_code ec;
  fs::rename(temporary.path(), file.target, ec);
  if (ec) cannot_write(file, ec.message());
  temporary.keep();
}

void write_together(std::span<const pending_file> files) {
  std::vector<std::unique_ptr<temporary_file>> temporaries;
  for (const pending_file& f : files) {
    temporaries.push_back(std::make_unique<temporary_file>(f.file.target));
    if (const std::string why = write_temporary(temporaries.back()->path(), f.write); !why.empty())
      cannot_write(f.file, why);
  }
  const interrupts_held held;
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    fs::rename(temporaries[i]->path(), files[i].file.target, ec);
    if (ec)
      cannot_write(files[i].file, i == 0 ? ec.message()
                                         : fmt::format("{}; {} of the files written with it were already replaced",
                                                       ec.message(), i));
    temporaries[i]->keep();
  }
}

}  // namespace mqa::io
