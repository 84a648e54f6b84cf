#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/scratch_dir.hpp"
#include "validator/input_error.hpp"
#include "validator/io/input_file.hpp"

namespace fs = std::filesystem;
namespace io = mqa::io;

namespace {

constexpr const char* kAccepted = "a regular test file";

std::string refusal_of(const fs::path& file) {
  try {
    io::require_regular_file(file, kAccepted);
  } catch (const mqa::input_error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a regular file is accepted with its size, also through a symbolic link", "[io][input_file]") {
  const mqa::test::scratch_dir dir("input-file-1");
  std::ofstream(dir.root / "seven.txt", std::ios::binary) << "7 bytes";
  fs::create_symlink(dir.root / "seven.txt", dir.root / "link");
  CHECK(io::require_regular_file(dir.root / "seven.txt", kAccepted) == 7);
  CHECK(io::require_regular_file(dir.root / "link", kAccepted) == 7);
  std::ofstream(dir.root / "empty.txt", std::ios::binary);
  CHECK(io::require_regular_file(dir.root / "empty.txt", kAccepted) == 0);
}

TEST_CASE("what is not a regular file is refused before it is read, named with what it is", "[io][input_file]") {
  const mqa::test::scratch_dir dir("input-file-2");
  REQUIRE(::mkfifo((dir.root / "fifo").c_str(), 0600) == 0);
  fs::create_symlink(dir.root / "gone", dir.root / "dangling");
  const auto refused = [](const fs::path& p, const std::string& what) {
    return p.string() + ": " + what + " (accepted: a regular test file)";
  };
  CHECK(refusal_of(dir.root / "missing") == refused(dir.root / "missing", "no such file"));
  CHECK(refusal_of(dir.root / "dangling") == refused(dir.root / "dangling", "is a symbolic link to a missing file"));
  CHECK(refusal_of(dir.root) == refused(dir.root, "is a folder, not a file"));
  CHECK(refusal_of(dir.root / "fifo") == refused(dir.root / "fifo", "is a FIFO (named pipe), not a file"));
  CHECK(refusal_of("/dev/zero") == refused("/dev/zero", "is a character device, not a file"));
  CHECK(refusal_of("") == "an input file's path is empty (accepted: a regular test file)");
}

TEST_CASE("a path the system cannot examine is refused with the system's reason", "[io][input_file]") {
  const mqa::test::scratch_dir dir("input-file-3");
  const fs::path too_long = dir.root / std::string(300, 'a');  // NAME_MAX is 255: stat fails, as root too
  CHECK(refusal_of(too_long) == too_long.string() + ": cannot be examined (File name too long; accepted: a regular test file)");
}
