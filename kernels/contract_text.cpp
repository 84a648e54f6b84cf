#include "kernels/contract_text.hpp"

#include <charconv>
#include <cstdint>
#include <string>

#include "reference/bounds/accumulators.hpp"

namespace mqa::kernels {
namespace {

// "dot fp32 promoted every 64": the accumulator's name, then its promotion interval if any.
bool read_dot(std::string_view value, contract& c) {
  constexpr std::string_view kPromoted = " promoted every ";
  const std::size_t at = value.find(kPromoted);
  if (at != std::string_view::npos) {
    const std::string_view every = value.substr(at + kPromoted.size());
    const auto [end, ec] = std::from_chars(every.data(), every.data() + every.size(), c.promote_every);
    if (ec != std::errc() || end != every.data() + every.size() || c.promote_every <= 0) return false;
    value = value.substr(0, at);
  }
  const auto dot = names::parse(bounds::dot_accumulators(), value);
  if (dot) c.dot = *dot;
  return dot.has_value();
}

template <class Rows, class E>
bool read_name(const Rows& rows, std::string_view value, E& field) {
  const auto v = names::parse(rows, value);
  if (v) field = *v;
  return v.has_value();
}

bool read_relu(std::string_view value, contract& c) {
  if (value == "keeps NaN") c.relu = exact::relu_rule::keeps_nan;
  else if (value == "fmax") c.relu = exact::relu_rule::fmax;
  else return false;
  return true;
}

// One item of the line: its leading word, and how the rest is read.
struct item_reader {
  std::string_view key;
  bool (*read)(std::string_view value, contract& c);
};
constexpr item_reader kItems[] = {
    {"dot", read_dot},
    {"heads", [](std::string_view v, contract& c) { return read_name(bounds::kHeadAccumulatorNames, v, c.heads); }},
    {"k_scale", [](std::string_view v, contract& c) { return read_name(bounds::kScalePlacementNames, v, c.scale); }},
    {"weights", [](std::string_view v, contract& c) { return read_name(bounds::kWeightPrecisionNames, v, c.weights); }},
    {"logits", [](std::string_view v, contract& c) { return read_name(bounds::kLogitsPrecisionNames, v, c.logits); }},
    {"relu", read_relu},
    {"columns", [](std::string_view v, contract& c) { return read_name(kColumnsLayoutNames, v, c.columns); }},
};

bool read_item(std::string_view item, contract& c) {
  // The two items that are a bare word: the promise of determinism, and the mask's name.
  if (item == "deterministic") {
    c.deterministic = true;
    return true;
  }
  if (const auto m = names::parse(kMaskingNames, item)) {
    c.mask = *m;
    return true;
  }
  const std::size_t space = item.find(' ');
  if (space == std::string_view::npos) return false;
  for (const auto& reader : kItems)
    if (item.substr(0, space) == reader.key) return reader.read(item.substr(space + 1), c);
  return false;
}

}  // namespace

std::optional<contract_line> parse_contract(std::string_view line) {
  const bool mask_from_cases = line.ends_with(kMaskFromCasesNote);
  if (mask_from_cases) line.remove_suffix(kMaskFromCasesNote.size());
  contract c;
  c.deterministic = false;  // said only when it holds
  for (std::string_view rest = line; !rest.empty();) {
    const std::size_t comma = rest.find(", ");
    if (!read_item(rest.substr(0, comma), c)) return std::nullopt;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  // Only describe()'s own line, in its order and with nothing missing, is read: the same text back.
  if (describe(c) != line || (mask_from_cases && c.mask != masking::clean)) return std::nullopt;
  return contract_line{.declared = c, .mask_from_cases = mask_from_cases};
}

}  // namespace mqa::kernels
