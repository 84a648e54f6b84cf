// A fresh, empty folder per test, removed afterwards; entries() lists everything in it, hidden
// names included, so a test can show that nothing partial was left behind.
#pragma once

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace mqa::test {

struct scratch_dir {
  std::filesystem::path root;
  // `name` must be unique among the tests: a TEST_CASE re-entered for each GENERATE row gets the
  // same folder again.
  explicit scratch_dir(std::string_view name) {
    root = std::filesystem::temp_directory_path() / fmt::format("mqa-{}-{}", name, ::getpid());
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(root, ignored);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  std::vector<std::string> entries(const std::filesystem::path& inside = {}) const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(root / inside)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_text(const std::filesystem::path& file, std::string_view text) {
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace mqa::test
