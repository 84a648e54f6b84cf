// The spelling of every enumerated case key: one table per enum, read both ways.
#include <algorithm>
#include <array>
#include <utility>

#include "case.hpp"

namespace mqa::cases {
namespace {

template <class E, std::size_t N>
using name_table = std::array<std::pair<E, std::string_view>, N>;

constexpr name_table<scale_kind, 2> kScaleKinds{{{scale_kind::fp32, "fp32"}, {scale_kind::ue8m0, "ue8m0"}}};

constexpr name_table<distribution, 4> kDistributions{{
    {distribution::normal, "normal"},
    {distribution::uniform, "uniform"},
    {distribution::outliers, "outliers"},
    {distribution::near_ties, "near-ties"},
}};

constexpr name_table<special_value, 6> kSpecialValues{{
    {special_value::subnormal, "subnormal"},
    {special_value::largest, "largest"},
    {special_value::negative_underflow, "negative-underflow"},
    {special_value::nan, "nan"},
    {special_value::zero_k_scale, "zero-k-scale"},
    {special_value::negative_k_scale, "negative-k-scale"},
}};

constexpr name_table<special_target, 3> kSpecialTargets{
    {{special_target::q, "q"}, {special_target::k, "k"}, {special_target::both, "both"}}};

constexpr name_table<layout_kind, 8> kLayoutKinds{{
    {layout_kind::causal, "causal"},
    {layout_kind::packed, "packed"},
    {layout_kind::context_parallel, "context-parallel"},
    {layout_kind::sliding, "sliding"},
    {layout_kind::compressed, "compressed"},
    {layout_kind::random, "random"},
    {layout_kind::explicit_windows, "explicit"},
    {layout_kind::paged, "paged"},
}};

constexpr name_table<paged_fill, 3> kPagedFills{{
    {paged_fill::shuffled, "shuffled"},
    {paged_fill::shared_prefix, "shared-prefix"},
    {paged_fill::sequential, "sequential"},
}};

constexpr name_table<unused_entry, 3> kUnusedEntries{
    {{unused_entry::zero, "zero"}, {unused_entry::minus_one, "minus-one"}, {unused_entry::stale, "stale"}}};

template <class E, std::size_t N>
std::string_view name_of(const name_table<E, N>& table, E value) {
  const auto it = std::find_if(table.begin(), table.end(), [&](const auto& row) { return row.first == value; });
  return it == table.end() ? std::string_view{"?"} : it->second;
}

template <class E, std::size_t N>
std::optional<E> value_of(const name_table<E, N>& table, std::string_view name) {
  const auto it = std::find_if(table.begin(), table.end(), [&](const auto& row) { return row.second == name; });
  if (it == table.end()) return std::nullopt;
  return it->first;
}

template <class E, std::size_t N>
std::string names_of(const name_table<E, N>& table) {
  std::string out;
  for (const auto& [value, name] : table) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace

std::string_view to_string(scale_kind v) { return name_of(kScaleKinds, v); }
std::string_view to_string(distribution v) { return name_of(kDistributions, v); }
std::string_view to_string(special_value v) { return name_of(kSpecialValues, v); }
std::string_view to_string(special_target v) { return name_of(kSpecialTargets, v); }
std::string_view to_string(layout_kind v) { return name_of(kLayoutKinds, v); }
std::string_view to_string(paged_fill v) { return name_of(kPagedFills, v); }
std::string_view to_string(unused_entry v) { return name_of(kUnusedEntries, v); }

std::optional<scale_kind> parse_scale_kind(std::string_view name) { return value_of(kScaleKinds, name); }
std::optional<distribution> parse_distribution(std::string_view name) { return value_of(kDistributions, name); }
std::optional<special_value> parse_special_value(std::string_view name) { return value_of(kSpecialValues, name); }
std::optional<special_target> parse_special_target(std::string_view name) { return value_of(kSpecialTargets, name); }
std::optional<layout_kind> parse_layout_kind(std::string_view name) { return value_of(kLayoutKinds, name); }
std::optional<paged_fill> parse_paged_fill(std::string_view name) { return value_of(kPagedFills, name); }
std::optional<unused_entry> parse_unused_entry(std::string_view name) { return value_of(kUnusedEntries, name); }

std::string scale_kind_names() { return names_of(kScaleKinds); }
std::string distribution_names() { return names_of(kDistributions); }
std::string special_value_names() { return names_of(kSpecialValues); }
std::string special_target_names() { return names_of(kSpecialTargets); }
std::string layout_kind_names() { return names_of(kLayoutKinds); }
std::string paged_fill_names() { return names_of(kPagedFills); }
std::string unused_entry_names() { return names_of(kUnusedEntries); }

bool is_k_scale_special(special_value v) {
  return v == special_value::zero_k_scale || v == special_value::negative_k_scale;
}

}  // namespace mqa::cases
