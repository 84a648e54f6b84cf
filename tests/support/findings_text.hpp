// A judgement's findings as a test's failure message reads them: the classes found, and each
// finding's count, first element and the bits there.
#pragma once

#include <fmt/core.h>

#include <set>
#include <string>

#include "validator/compare/comparator.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::test {

inline std::set<std::string> finding_classes(const compare::judgement& j) {
  std::set<std::string> out;
  for (const auto& f : j.findings) out.insert(std::string(compare::to_string(f.kind)));
  return out;
}

inline std::string findings_text(const runner::outcome& r) {
  std::string s;
  for (const auto& f : r.judgement.findings)
    s += fmt::format("{} x{} first ({}, {}) expected {:08X} actual {:08X}; ", compare::to_string(f.kind), f.count,
                     f.first_row, f.first_col, f.expected_bits, f.actual_bits);
  return s.empty() ? "no findings" : s;
}

}  // namespace mqa::test
