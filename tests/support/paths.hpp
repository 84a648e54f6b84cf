// Where tests find the repository's test data and the built command-line tool.
#pragma once

#include <filesystem>

namespace mqa::test {

inline std::filesystem::path source_dir() { return MQA_SOURCE_DIR; }
// Third-party fp8 conversion vectors kept in the repository (tests/data/golden/fp8/README.md).
inline std::filesystem::path golden_fp8_dir() { return source_dir() / "tests" / "data" / "golden" / "fp8"; }
// e2m1fn and bfloat16 vectors from the H200 (tests/data/golden/fp4/README.md).
inline std::filesystem::path golden_fp4_dir() { return source_dir() / "tests" / "data" / "golden" / "fp4"; }
inline std::filesystem::path mqacheck_binary() { return MQA_BINARY; }

}  // namespace mqa::test
