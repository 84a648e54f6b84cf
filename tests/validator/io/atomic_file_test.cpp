#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <stdexcept>

#include "support/scratch_dir.hpp"
#include "validator/input_error.hpp"
#include "validator/io/atomic_file.hpp"
#include "validator/io/output_set.hpp"
#include "support/input_error_of.hpp"

namespace fs = std::filesystem;
namespace io = mqa::io;
using mqa::test::read_text;
using mqa::test::scratch_dir;
using mqa::test::write_text;

namespace {

io::stream_writer text(std::string s) {
  return [s](std::ostream& out) { out << s; };
}

io::stream_writer failing(std::string partial) {
  return [partial](std::ostream& out) {
    out << partial;
    throw std::runtime_error("the writer gave up");
  };
}

}  // namespace

TEST_CASE("a file written through a symbolic link replaces the link's target, the link stays", "[io][atomic]") {
  scratch_dir dir("atomic-link");
  write_text(dir.root / "target.json", "old");
  fs::create_symlink("target.json", dir.root / "link.json");
  io::write_atomically(io::resolve_output_file("--json", dir.root / "link.json"), text("new"));
  CHECK(fs::is_symlink(dir.root / "link.json"));
  CHECK(fs::read_symlink(dir.root / "link.json") == "target.json");
  CHECK(read_text(dir.root / "target.json") == "new");
  CHECK(dir.entries() == std::vector<std::string>{"link.json", "target.json"});
}

TEST_CASE("a failed write leaves the old file and no temporary, and names the user's path", "[io][atomic]") {
  scratch_dir dir("atomic-failure");
  write_text(dir.root / "target.json", "old");
  fs::create_symlink("target.json", dir.root / "link.json");
  const std::string error = mqa::test::input_error_of(
      [&] { io::write_atomically(io::resolve_output_file("", dir.root / "link.json"), failing("half")); });
  CHECK(error == (dir.root / "link.json").string() + ": cannot write the file (the writer gave up)");
  CHECK(read_text(dir.root / "target.json") == "old");
  CHECK(dir.entries() == std::vector<std::string>{"link.json", "target.json"});
}

TEST_CASE("files written together all appear, or none does", "[io][atomic]") {
  scratch_dir dir("atomic-together");
  for (const char* name : {"a.md", "b.xml", "c.json"}) write_text(dir.root / name, "old");
  auto pending = [&](io::stream_writer second) {
    return std::array<io::pending_file, 3>{{{io::resolve_output_file("", dir.root / "a.md"), text("new a")},
                                            {io::resolve_output_file("", dir.root / "b.xml"), std::move(second)},
                                            {io::resolve_output_file("", dir.root / "c.json"), text("new c")}}};
  };
  const std::string error = mqa::test::input_error_of([&] { io::write_together(pending(failing("half b"))); });
  CHECK_THAT(error, Catch::StartsWith((dir.root / "b.xml").string() + ": cannot write the file"));
  for (const char* name : {"a.md", "b.xml", "c.json"}) CHECK(read_text(dir.root / name) == "old");
  CHECK(dir.entries() == std::vector<std::string>{"a.md", "b.xml", "c.json"});

  io::write_together(pending(text("new b")));
  CHECK(read_text(dir.root / "a.md") == "new a");
  CHECK(read_text(dir.root / "b.xml") == "new b");
  CHECK(read_text(dir.root / "c.json") == "new c");
  CHECK(dir.entries() == std::vector<std::string>{"a.md", "b.xml", "c.json"});
}

TEST_CASE("an output set creates a new folder only when every file is written", "[io][atomic]") {
  scratch_dir dir("output-set");
  const std::vector<std::string> names{"summary.md", "report.json"};
  SECTION("a new folder appears whole") {
    io::output_set set("--out", dir.root / "reports/", names);
    CHECK(dir.entries().size() == 1);  // the hidden staging folder, reserved before the work
    CHECK(dir.entries().front().starts_with(".reports.partial-"));
    const std::array<io::stream_writer, 2> writers{text("md"), text("{}")};
    set.write(writers);
    CHECK(dir.entries() == std::vector<std::string>{"reports"});
    CHECK(dir.entries("reports") == std::vector<std::string>{"report.json", "summary.md"});
    CHECK(set.shown("report.json") == (dir.root / "reports/report.json").string());
  }
  SECTION("a failure leaves no folder at all") {
    {
      io::output_set set("--out", dir.root / "reports", names);
      const std::array<io::stream_writer, 2> writers{text("md"), failing("{")};
      CHECK_THAT(mqa::test::input_error_of([&] { set.write(writers); }),
                 Catch::StartsWith((dir.root / "reports/report.json").string() + ": cannot write the file"));
    }
    CHECK(dir.entries().empty());
  }
  SECTION("an existing folder keeps its other files") {
    fs::create_directory(dir.root / "reports");
    write_text(dir.root / "reports/notes.txt", "mine");
    io::output_set set("--out", dir.root / "reports", names);
    CHECK(dir.entries() == std::vector<std::string>{"reports"});
    const std::array<io::stream_writer, 2> writers{text("md"), text("{}")};
    set.write(writers);
    CHECK(dir.entries("reports") == std::vector<std::string>{"notes.txt", "report.json", "summary.md"});
  }
}
