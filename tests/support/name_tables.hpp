// What every enum <-> name table must be (reference/names/names.hpp): each name reads back to its own
// value and the value's name is that name, no name or value twice, and the "accepted:" list is
// every name in table order.
#pragma once

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <string_view>

#include "reference/names/names.hpp"

namespace mqa::test {

template <class Rows>
void check_name_table(const Rows& rows, std::string_view accepted) {
  std::set<std::string_view> spellings;
  std::set<int> values;
  for (const auto& row : rows) {
    CAPTURE(row.name);
    CHECK_FALSE(row.name.empty());
    CHECK(spellings.insert(row.name).second);
    CHECK(values.insert(static_cast<int>(row.id)).second);
    CHECK(names::parse(rows, row.name) == row.id);
    CHECK(names::name_of(rows, row.id) == row.name);
    CHECK_FALSE(names::parse(rows, std::string(row.name) + " "));  // exact spellings only
  }
  CHECK_FALSE(names::parse(rows, ""));
  CHECK(names::accepted(rows) == accepted);
}

}  // namespace mqa::test
