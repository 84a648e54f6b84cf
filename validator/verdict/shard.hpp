// `run --shard I/N`: a suite that outgrows one machine runs as N shards, each a
// deterministic part of the suite's (case, variant) pairs, and `mqacheck merge` puts the N
// reports back together. Pairs are numbered in run order: case by case in suite order, within a
// case the selected variants in order (pair = case_index * variants + variant_index). Shard I
// (1-based, as `--shard 1/3`) runs the pairs with pair mod N = I - 1: round robin over pairs
// rather than over cases, so that the variants of one large case spread over every shard and the
// shards take about the same time (each shard generates the inputs and the reference of every
// case it runs a pair of).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mqa::verdict {

struct shard {
  int index = 1, count = 1;  // 1 <= index <= count

  bool owns(std::size_t pair) const { return static_cast<int>(pair % static_cast<std::size_t>(count)) == index - 1; }
  std::string to_string() const;  // "2/3"
  bool operator==(const shard&) const = default;
};

inline constexpr int kMaxShards = 10000;

// "I/N" with 1 <= I <= N <= kMaxShards; anything else is an input_error naming `option`.
shard parse_shard(std::string_view option, std::string_view text);

}  // namespace mqa::verdict
