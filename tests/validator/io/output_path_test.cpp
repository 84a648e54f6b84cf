#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <sys/stat.h>

#include <array>
#include <filesystem>

#include "support/input_error_of.hpp"
#include "support/scratch_dir.hpp"
#include "validator/input_error.hpp"
#include "validator/io/output_path.hpp"

namespace fs = std::filesystem;
namespace io = mqa::io;
using mqa::test::input_error_of;
using mqa::test::scratch_dir;
using mqa::test::write_text;

TEST_CASE("an output file is a new path or a regular file, written where it lies", "[io][output]") {
  scratch_dir dir("output-file");
  const fs::path fresh = dir.root / "new.json";
  CHECK(io::resolve_output_file("--json", fresh).target == fresh);
  write_text(dir.root / "old.json", "old");
  CHECK(io::resolve_output_file("--json", dir.root / "old.json").target == dir.root / "old.json");

  SECTION("a symbolic link is followed to the file it names, also along a chain and when dangling") {
    fs::create_symlink("old.json", dir.root / "link.json");
    fs::create_symlink(dir.root / "link.json", dir.root / "link2.json");
    fs::create_symlink("nowhere.json", dir.root / "dangling.json");
    const io::output_file linked = io::resolve_output_file("--json", dir.root / "link2.json");
    CHECK(linked.path == dir.root / "link2.json");
    CHECK(linked.target == dir.root / "old.json");
    CHECK(io::resolve_output_file("--json", dir.root / "dangling.json").target == dir.root / "nowhere.json");
  }
  SECTION("a loop of links is refused") {
    fs::create_symlink("b", dir.root / "a");
    fs::create_symlink("a", dir.root / "b");
    CHECK_THAT(input_error_of([&] { io::resolve_output_file("--json", dir.root / "a"); }),
               Catch::Contains("too many levels of symbolic links"));
  }
}

TEST_CASE("folders, FIFOs, devices, empty paths and missing folders are refused before any work", "[io][output]") {
  scratch_dir dir("output-refused");
  fs::create_directory(dir.root / "folder");
  REQUIRE(::mkfifo((dir.root / "fifo").c_str(), 0600) == 0);
  fs::create_symlink(dir.root / "fifo", dir.root / "to-fifo");
  write_text(dir.root / "file", "x");
  // Relative names are inside the scratch folder; "{}" in a message stands for that folder.
  const auto [name, message] = GENERATE(table<std::string, std::string>({
      {"folder", "--json {}/folder: is a folder (accepted: a regular file"},
      {"folder/", "is a folder"},
      {"fifo", "is a FIFO (named pipe) (accepted: a regular file, which is replaced whole, or a new path)"},
      {"to-fifo", "links to {}/fifo, which is a FIFO (named pipe)"},
      // Only looked at, never written: root would otherwise turn it into a regular file.
      {"/dev/null", "--json /dev/null: is a character device (accepted: a regular file"},
      {"", "--json: empty path (accepted: a regular file"},
      {"missing/out.json", "the folder {}/missing does not exist"},
      {"file/out.json", "{}/file is a regular file, not a folder"},
  }));
  const fs::path path = name.empty() ? fs::path() : dir.root / name;
  CAPTURE(path);
  std::string expected = message;
  if (const auto at = expected.find("{}"); at != std::string::npos) expected.replace(at, 2, dir.root.string());
  CHECK_THAT(input_error_of([&] { io::resolve_output_file("--json", path); }), Catch::Contains(expected));
  CHECK(fs::is_fifo(dir.root / "fifo"));
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("an output's name leaves room for its temporary's, which is made after the work", "[io][output]") {
  scratch_dir dir("output-name");
  const std::size_t longest = io::kMaxNameBytes - io::kTemporaryNameBytes;
  CHECK(io::resolve_output_file("--json", dir.root / std::string(longest, 'z')).target.filename().string().size() ==
        longest);
  CHECK(input_error_of([&] { io::resolve_output_file("--json", dir.root / std::string(longest + 1, 'z')); }) ==
        fmt::format("--json {}/{}: its name is 225 bytes (accepted: at most 224, which leaves room for the temporary "
                    "name it is written under)",
                    dir.root.string(), std::string(longest + 1, 'z')));
  // The longest temporary name the writer makes (its process id and counter at their widest) fits.
  const std::string widest = fmt::format(".{}.{}-{}.partial", std::string(longest, 'z'), 4294967295u, 4294967295u);
  CHECK(widest.size() == io::kMaxNameBytes);
}

TEST_CASE("an output is never one of the command's inputs, however it is spelled", "[io][output]") {
  scratch_dir dir("output-input");
  const fs::path logits = dir.root / "logits.npy";
  write_text(logits, "input");
  fs::create_symlink(logits, dir.root / "link.npy");
  fs::create_hard_link(logits, dir.root / "hard.npy");
  const std::array<io::named_input, 2> inputs{{{"--logits", logits}, {"--repeat", ""}}};
  for (const fs::path& spelled : {logits, dir.root / "link.npy", dir.root / "hard.npy", dir.root / "." / "logits.npy",
                                  dir.root / "folder" / ".." / "logits.npy"}) {
    CAPTURE(spelled);
    fs::create_directories(dir.root / "folder");
    CHECK_THAT(input_error_of([&] { io::resolve_output_file("--json", spelled, inputs); }),
               Catch::Contains("is the same file as --logits (" + logits.string() +
                               "); an output never replaces an input"));
  }
  CHECK(mqa::test::read_text(logits) == "input");
  CHECK(io::resolve_output_file("--json", dir.root / "other.json", inputs).target == dir.root / "other.json");
}

TEST_CASE("an output folder exists or is new in an existing folder, and its files are checked too", "[io][output]") {
  scratch_dir dir("output-folder");
  const std::array<std::string_view, 2> files{"report.json", "summary.md"};
  const io::output_folder fresh = io::resolve_output_folder("--out", dir.root / "reports/", files);
  CHECK_FALSE(fresh.exists);
  CHECK(fresh.target == dir.root / "reports");
  CHECK(dir.entries().empty());  // nothing is created by checking

  fs::create_directory(dir.root / "reports");
  CHECK(io::resolve_output_folder("--out", dir.root / "reports", files).exists);
  fs::create_symlink(dir.root / "reports", dir.root / "linked");
  const io::output_folder linked = io::resolve_output_folder("--out", dir.root / "linked", files);
  CHECK((linked.exists && linked.target == dir.root / "reports"));
  CHECK(io::resolve_output_folder("--out", dir.root / "reports/..", files).target == dir.root);  // has a parent

  fs::create_directory(dir.root / "reports/summary.md");
  CHECK_THAT(input_error_of([&] { io::resolve_output_folder("--out", dir.root / "reports", files); }),
             Catch::Contains((dir.root / "reports/summary.md").string() + ": is a folder"));
  write_text(dir.root / "file", "x");
  CHECK_THAT(input_error_of([&] { io::resolve_output_folder("--out", dir.root / "file", files); }),
             Catch::Contains("is a regular file (accepted: a folder, or a new path in an existing folder)"));
  CHECK_THAT(input_error_of([&] { io::resolve_output_folder("--out", dir.root / "no/such", files); }),
             Catch::Contains("does not exist"));
  CHECK_THAT(input_error_of([&] { io::resolve_output_folder("--out", "", files); }),
             Catch::StartsWith("--out: empty path"));
  // A file of the set that is one of the command's inputs (the suite a run reads) is refused.
  fs::remove(dir.root / "reports/summary.md");
  write_text(dir.root / "reports/summary.md", "[suite]");
  const std::array<io::named_input, 1> suite{{{"--cases", dir.root / "reports/summary.md"}}};
  CHECK_THAT(input_error_of([&] { io::resolve_output_folder("--out", dir.root / "reports", files, suite); }),
             Catch::Contains("is the same file as --cases"));
  CHECK(mqa::test::read_text(dir.root / "reports/summary.md") == "[suite]");
  CHECK(io::shown_inside("reports/", "report.json") == "reports/report.json");
  CHECK(io::shown_inside("reports//", "report.json") == "reports/report.json");
}
