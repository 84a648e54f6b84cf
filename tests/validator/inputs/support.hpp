// A case written as a suite would write it, for the inputs tests.
#pragma once

#include <fmt/core.h>

#include <string>

#include "validator/case/load.hpp"

namespace mqa::test {

// `keys` are extra TOML lines of the case (after name, m, n, heads, head_dim).
inline cases::case_spec input_case(std::int64_t m, std::int64_t n, std::int64_t heads, std::int64_t head_dim,
                                   const std::string& keys = "") {
  const std::string text =
      fmt::format("[suite]\nname = \"t\"\n[[case]]\nname = \"c\"\nm = {}\nn = {}\nheads = {}\nhead_dim = {}\n{}\n", m, n,
                  heads, head_dim, keys);
  return cases::parse_suite(text, "test.toml").cases.at(0);
}

}  // namespace mqa::test
