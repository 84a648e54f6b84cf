// The per-run scratch folder where an adapter finds each case's bundle and writes its outputs:
// created fresh and private (mkdtemp, mode 0700), removed whole when the run ends, error or not.
#pragma once

#include <boost/core/noncopyable.hpp>

#include <cstdint>
#include <filesystem>

namespace mqa::external {

class scratch_folder : boost::noncopyable {
 public:
  // Under $TMPDIR when it is set; else under /dev/shm when that is a writable folder with
  // `bytes_needed` free (memory-backed: the bundles and outputs of a case cost no disk I/O);
  // else under the system's temporary folder. Throws input_error when it cannot be created.
  explicit scratch_folder(std::uintmax_t bytes_needed);
  ~scratch_folder();

  const std::filesystem::path& path() const { return path_; }  // absolute

 private:
  std::filesystem::path path_;
};

}  // namespace mqa::external
