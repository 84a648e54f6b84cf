#include "field.hpp"

#include <fmt/core.h>

#include <cmath>

#include "suggest.hpp"

namespace mqa::cases {

location location_of(const toml::source_region& region) {
  return {region.path ? *region.path : std::string("<input>"), region.begin.line, region.begin.column};
}

std::string_view describe_type(toml::node_type t) {
  switch (t) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
  }
  return "an unknown value";
}

location field::where() const { return location_of(node_.source()); }

void field::fail(std::string_view problem) const { fail_at(where(), case_name_, key_, problem); }

void field::wrong_type(std::string_view expected) const {
  fail(fmt::format("expected {}, found {}", expected, describe_type(node_.type())));
}

std::string field::fmt_unknown(std::string_view text, std::string_view accepted) {
  return fmt::format("unknown value '{}'{} (accepted: {})", text, did_you_mean(text, accepted), accepted);
}

std::int64_t field::integer(std::int64_t lo, std::int64_t hi) const {
  const auto* v = node_.as_integer();
  if (!v) wrong_type(fmt::format("an integer in [{}, {}]", lo, hi));
  const std::int64_t x = v->get();
  if (x < lo || x > hi) fail(fmt::format("{} is out of range (accepted: an integer in [{}, {}])", x, lo, hi));
  return x;
}

double field::number() const {
  if (const auto* i = node_.as_integer()) return static_cast<double>(i->get());
  const auto* f = node_.as_floating_point();
  if (!f) wrong_type("a number");
  if (!std::isfinite(f->get())) fail(fmt::format("{} is not finite (accepted: a finite number)", f->get()));
  return f->get();
}

bool field::boolean() const {
  const auto* v = node_.as_boolean();
  if (!v) wrong_type("a boolean (true or false)");
  return v->get();
}

std::string field::string() const {
  const auto* v = node_.as_string();
  if (!v) wrong_type("a string");
  return v->get();
}

const toml::array& field::array() const {
  const auto* v = node_.as_array();
  if (!v) wrong_type("an array");
  return *v;
}

const toml::table& field::table() const {
  const auto* v = node_.as_table();
  if (!v) wrong_type("a table");
  return *v;
}

field field::element(std::size_t i) const {
  return field(*array().get(i), fmt::format("{}[{}]", key_, i), case_name_);
}

}  // namespace mqa::cases
