// A suite of one case, as a test that needs a case writes it: the four sizes every case has, then the
// case's other keys as TOML lines (cases/README.md). The names matter only where a test reads them
// back; messages name the file "<suite>.toml".
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <string>

#include "validator/case/load.hpp"

namespace mqa::test {

struct one_case {
  std::string suite = "s", name = "c";
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  std::string keys{};  // e.g. "seed = 3\nlayout = { kind = \"random\" }"
};

inline std::string suite_toml(const one_case& c) {
  return fmt::format("[suite]\nname = \"{}\"\n[[case]]\nname = \"{}\"\nm = {}\nn = {}\nheads = {}\nhead_dim = {}\n{}\n",
                     c.suite, c.name, c.m, c.n, c.heads, c.head_dim, c.keys);
}

inline cases::suite parse_one_case(const one_case& c) {
  return cases::parse_suite(suite_toml(c), fmt::format("{}.toml", c.suite));
}

}  // namespace mqa::test
