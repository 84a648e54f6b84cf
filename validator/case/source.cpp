#include "source.hpp"

#include <fmt/core.h>

#include "validator/input_error.hpp"

namespace mqa::cases {

std::string to_string(const location& where) { return fmt::format("{}:{}:{}", where.file, where.line, where.column); }

void fail_at(const location& where, std::string_view case_name, std::string_view key, std::string_view problem) {
  std::string message = to_string(where) + ": ";
  if (!case_name.empty()) message += fmt::format("case '{}': ", case_name);
  if (!key.empty()) message += fmt::format("key '{}': ", key);
  message += problem;
  throw input_error(message);
}

}  // namespace mqa::cases
