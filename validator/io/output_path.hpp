// Where a command may write (never destroy, never leave half). Every output
// path a user gives is resolved and checked here before any work starts, so that minutes of work
// never end in "cannot write", and so that writing never destroys what the path named:
//
//   - an existing symbolic link is written through: the file it points to is replaced and the link
//     keeps pointing at it (a dangling link creates its target);
//   - folders, FIFOs, devices and sockets are refused: replacing /dev/null by a regular file (as
//     root) or a FIFO whose reader then gets nothing is never what the user meant;
//   - a path that is one of the command's inputs (--json equal to --logits) is refused;
//   - the folder the file goes into must exist and be writable.
//
// Every refusal is one input_error naming the option, the path as given, what is wrong and what is
// accepted. Messages always name the user's path, never a temporary one.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace mqa::io {

struct output_file {
  std::filesystem::path path;    // as the user gave it: what messages name
  std::filesystem::path target;  // where the bytes go: `path`, or the end of the symlink chain at `path`
};

// An input the output must not overwrite, named as the user knows it ("--logits", "the bundle's
// case.toml").
struct named_input {
  std::string what;
  std::filesystem::path path;
};

// "a folder", "a FIFO (named pipe)", "a character device", ...: for messages.
std::string_view describe(std::filesystem::file_type type);

// The end of the chain of symbolic links starting at `path` (`path` itself when it is not a link);
// the result may not exist. A loop is an input_error.
std::filesystem::path follow_links(const std::filesystem::path& path);

// The longest file name a directory holds (Linux's NAME_MAX), and what the name of an output's
// temporary (atomic_file.cpp: ".NAME.PID-COUNTER.partial") adds to it: an output's name is at
// most the difference, so that the temporary can be made once the work is done.
inline constexpr std::size_t kMaxNameBytes = 255, kTemporaryNameBytes = 31;

// Checks an output file (see the header comment); `option` ("--json") prefixes messages.
output_file resolve_output_file(std::string_view option, const std::filesystem::path& path,
                                std::span<const named_input> inputs = {});

// An output folder that receives several files (`run --out`): an existing folder (or a link to
// one), or a new path whose parent folder exists and is writable. Nothing is created. Each of
// `files` inside it must be a regular file or absent, and none of `inputs` (resolve_output_file's
// rules).
struct output_folder {
  std::filesystem::path path;    // as given
  std::filesystem::path target;  // links followed
  bool exists = false;
};
output_folder resolve_output_folder(std::string_view option, const std::filesystem::path& path,
                                    std::span<const std::string_view> files, std::span<const named_input> inputs = {});

// "reports/report.json" for output folder "reports/" and file "report.json" (no "//").
std::string shown_inside(const std::filesystem::path& folder, std::string_view file);

}  // namespace mqa::io
