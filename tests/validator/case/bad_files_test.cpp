// Every file in bad/ is a suite with one mistake. Its first line says where the error must
// point and a piece of the message:   # expect: LINE:COLUMN TEXT
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "validator/case/load.hpp"
#include "validator/input_error.hpp"

namespace fs = std::filesystem;

namespace {

struct expectation {
  std::string location;  // "LINE:COLUMN"
  std::string text;
};

expectation read_expectation(const fs::path& file) {
  std::ifstream in(file);
  std::string first;
  std::getline(in, first);
  std::smatch m;
  REQUIRE(std::regex_match(first, m, std::regex(R"(# expect: (\d+:\d+) (.+))")));
  return {m[1], m[2]};
}

}  // namespace

TEST_CASE("every bad case file fails with its file:line:column and the key", "[case][bad]") {
  const fs::path folder = fs::path(MQA_SOURCE_DIR) / "tests/validator/case/bad";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 40);

  for (const fs::path& file : files) {
    CAPTURE(file.filename().string());
    const expectation expected = read_expectation(file);
    std::string message;
    try {
      (void)mqa::cases::load_suite(file);
    } catch (const mqa::input_error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK(message.starts_with(file.string() + ":" + expected.location + ": "));
    CHECK(message.find(expected.text) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);  // one line
  }
}
