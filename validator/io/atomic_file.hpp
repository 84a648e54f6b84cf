// Output files appear whole or not at all: written to a hidden temporary sibling, then renamed.
#pragma once

#include <filesystem>
#include <functional>

namespace mqa::io {

// Calls write(temporary) and renames the temporary to `file`. Any failure (an exception from
// write, a failed rename) removes the temporary and throws input_error naming `file`.
void write_through_temporary(const std::filesystem::path& file,
                             const std::function<void(const std::filesystem::path& temporary)>& write);

}  // namespace mqa::io
