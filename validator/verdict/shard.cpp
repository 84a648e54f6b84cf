#include "shard.hpp"

#include <fmt/core.h>

#include <charconv>

#include "validator/input_error.hpp"

namespace mqa::verdict {
std::optional<int> whole_number(std::string_view s) {
  int out = 0;
  if (s.empty() || s.size() > 9) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return out;
}

std::string shard::to_string() const { return fmt::format("{}/{}", index, count); }

shard parse_shard(std::string_view option, std::string_view text) {
  const auto slash = text.find('/');
  const std::optional<int> index = slash == std::string_view::npos ? std::nullopt : whole_number(text.substr(0, slash));
  const std::optional<int> count = slash == std::string_view::npos ? std::nullopt : whole_number(text.substr(slash + 1));
  if (!index || !count)
    throw input_error(fmt::format("{} '{}': expected I/N, the I-th of N shards (e.g. 2/3)", option, text));
  shard s(*index, *count);
  if (s.count < 1 || s.count > kMaxShards)
    throw input_error(fmt::format("{} '{}': N must be between 1 and {}", option, text, kMaxShards));
  if (s.index < 1 || s.index > s.count)
    throw input_error(fmt::format("{} '{}': I must be between 1 and N = {} (shards are numbered from 1)", option, text,
                                  s.count));
  return s;
}

}  // namespace mqa::verdict
