// The per-run scratch folder where an adapter finds each case's inputs and writes its outputs:
// created fresh and private (mkdtemp, mode 0700), removed whole when the run ends, error or not,
// and by the interrupt handler (validator/io/interrupt.hpp) when a second Ctrl-C ends mqacheck at once.
//
// The adapter runs as the same user and may change anything in it: rename a folder, plant a
// symbolic link where mqacheck is about to write, swap a file after answering. So mqacheck keeps
// a descriptor of every folder it created here and reaches files only through it (anchored
// paths, /proc/self/fd/N/name): whatever the adapter renamed or linked meanwhile, mqacheck writes
// into and reads from the folders it made, creates files only new (never through a link) and
// opens outputs without following links.
#pragma once

#include <boost/core/noncopyable.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "validator/io/interrupt.hpp"

namespace mqa::external {

// A folder mqacheck created, and the descriptor it reaches it by.
class anchored_folder : boost::noncopyable {
 public:
  anchored_folder() = default;
  ~anchored_folder();  // closes the descriptor (removal is the owner's)
  anchored_folder(anchored_folder&& other) noexcept;
  anchored_folder& operator=(anchored_folder&& other) noexcept;

  // Where the adapter is told the folder is (its name when it was created).
  const std::filesystem::path& path() const { return path_; }
  // `name` in the folder as created here, whatever now lies at path(): for mqacheck's own reads and writes.
  std::filesystem::path anchored(std::string_view name) const;
  std::filesystem::path anchor() const;  // the folder itself (/proc/self/fd/N)
  int descriptor() const { return fd_; }

 private:
  friend class scratch_folder;
  anchored_folder(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::filesystem::path path_;
  int fd_ = -1;
};

class scratch_folder : boost::noncopyable {
 public:
  // Under $TMPDIR when it is set; else under /dev/shm when that is a writable folder with
  // `bytes_needed` free (memory-backed: the bundles and outputs of a case cost no disk I/O);
  // else under the system's temporary folder. Throws input_error when it cannot be created.
  explicit scratch_folder(std::uintmax_t bytes_needed);
  ~scratch_folder();  // removes everything in it, then the folder

  const std::filesystem::path& path() const { return root_.path(); }  // absolute

  // A new folder in the scratch folder, "<stem>-XXXXXX" with a random suffix, created here (never
  // one that existed) and opened without following links. Throws input_error.
  anchored_folder make_folder(std::string_view stem) const;
  // Removes a folder made by make_folder and everything in it (links removed, never followed).
  void remove(anchored_folder& folder) const noexcept;

 private:
  anchored_folder root_;
  std::unique_ptr<io::removed_on_interrupt> on_interrupt_;
};

}  // namespace mqa::external
