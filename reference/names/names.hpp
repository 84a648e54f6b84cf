// Enum <-> name tables, read both ways by one helper: every enumerated value the tree spells (a
// case key, a command-line flag, a report field) has its spelling written once, in a table of rows
// that each carry an `id` and a `name`. A traits table whose rows have both (fp8::kFormats,
// bounds::dot_accumulators()) is such a table as it stands; a bare enum gets a names::table.
// Header-only, and the lowest folder that needs it: reference/, kernels/ and validator/ all read it.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace mqa::names {

template <class E>
struct entry {
  E id;
  std::string_view name;
};

template <class E, std::size_t N>
using table = std::array<entry<E>, N>;

// The name of `id`, or "?" for a value the table lacks (a test per table walks every value).
template <class Rows, class E>
constexpr std::string_view name_of(const Rows& rows, E id) {
  for (const auto& row : rows)
    if (row.id == id) return row.name;
  return "?";
}

// The value spelled `text` exactly (no case folding, no trimming); nullopt for anything else.
template <class Rows, class E = std::remove_cvref_t<decltype(std::declval<const Rows&>().begin()->id)>>
constexpr std::optional<E> parse(const Rows& rows, std::string_view text) {
  for (const auto& row : rows)
    if (row.name == text) return row.id;
  return std::nullopt;
}

// "a, b, c": every name in table order, for the "accepted: ..." part of an error message.
template <class Rows>
std::string accepted(const Rows& rows) {
  std::string out;
  for (const auto& row : rows) {
    if (!out.empty()) out += ", ";
    out += row.name;
  }
  return out;
}

}  // namespace mqa::names
