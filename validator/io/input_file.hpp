// An input file a user named (a suite, an .npy array, a bundle's digest.json), checked before a
// byte of it is read: a folder opens and reads as empty text on Linux, a FIFO blocks the reader
// and a device never ends, so each would become a wrong message, a hang or unbounded memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace mqa::io {

// The size of `file` when it is a regular file (symbolic links followed). Otherwise one
// input_error naming the path, what it is and what is accepted:
//   "PATH: no such file (accepted: ACCEPTED)"
//   "PATH: is a symbolic link to a missing file (accepted: ACCEPTED)"
//   "PATH: is a FIFO (named pipe), not a file (accepted: ACCEPTED)"
//   "PATH: cannot be examined (File name too long; accepted: ACCEPTED)"
// An empty path is refused too ("an input file's path is empty").
std::uintmax_t require_regular_file(const std::filesystem::path& file, std::string_view accepted);

}  // namespace mqa::io
