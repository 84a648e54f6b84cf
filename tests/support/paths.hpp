// Where tests find the project's shared/ folder and the built command-line tool.
#pragma once

#include <filesystem>

namespace mqa::test {

inline std::filesystem::path shared_dir() { return MQA_SHARED_DIR; }
inline std::filesystem::path golden_fp8_dir() { return shared_dir() / "golden" / "fp8"; }
inline std::filesystem::path source_dir() { return MQA_SOURCE_DIR; }
inline std::filesystem::path mqacheck_binary() { return MQA_BINARY; }

}  // namespace mqa::test
