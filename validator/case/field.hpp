// One TOML value being read as one case key: typed accessors that fail with the value's own
// line and column, the key's dotted path and what the key accepts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <toml++/toml.h>

#include "reference/names/names.hpp"
#include "source.hpp"

namespace mqa::cases {

class field {
 public:
  field(const toml::node& node, std::string key, std::string case_name)
      : node_(node), key_(std::move(key)), case_name_(std::move(case_name)) {}

  const toml::node& node() const { return node_; }
  const std::string& key() const { return key_; }
  location where() const;

  std::int64_t integer(std::int64_t lo, std::int64_t hi) const;
  double number() const;  // an integer or a float, finite
  bool boolean() const;
  std::string string() const;
  const toml::array& array() const;
  const toml::table& table() const;

  // A string naming one of a fixed set of values: a names table (reference/names/names.hpp), or any
  // rows with an id and a name (fp8::kFormats).
  template <class Rows>
  auto choice(const Rows& rows) const {
    const std::string text = string();
    if (const auto v = names::parse(rows, text)) return *v;
    fail(fmt_unknown(text, names::accepted(rows)));
  }

  // Element i of an array, as a field of its own ("layout.ks[3]").
  field element(std::size_t i) const;

  [[noreturn]] void fail(std::string_view problem) const;

 private:
  [[noreturn]] void wrong_type(std::string_view expected) const;
  static std::string fmt_unknown(std::string_view text, std::string_view accepted);

  const toml::node& node_;
  std::string key_;
  std::string case_name_;
};

location location_of(const toml::source_region& region);

// "an integer", "a string", ... as a reader would say it.
std::string_view describe_type(toml::node_type t);

}  // namespace mqa::cases
