// `run --shard I/N`: a suite that outgrows one machine runs as N shards, each a
// deterministic part of the suite's (case, variant) pairs, and `mqacheck merge` puts the N
// reports back together. Pairs are numbered in run order: case by case in suite order, within a
// case the selected variants in order (pair = case_index * variants + variant_index). Shard I
// (1-based, as `--shard 1/3`) runs the pairs with pair mod N = I - 1: round robin over pairs
// rather than over cases, so that the variants of one large case spread over every shard and the
// shards take about the same time (each shard generates the inputs and the reference of every
// case it runs a pair of).
//
// A shard may instead own an explicit set of pairs (`run --devices`: each device's worker runs
// the pairs a cost balance gave it); its report lists them, so that `merge` checks ownership
// against that list.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mqa::verdict {

// Where `--shard auto` found the shard: the scheduler and the variables it read, as they were.
struct shard_source {
  std::string scheduler;                           // "slurm", "kubernetes", "buildkite", "gitlab"
  std::map<std::string, std::string> variables;  // name -> value
  bool operator==(const shard_source&) const = default;
};

struct shard {
  shard() = default;
  shard(int i, int n) : index(i), count(n) {}  // shard I of N, by pair mod N

  int index = 1, count = 1;  // 1 <= index <= count
  std::optional<std::vector<std::size_t>> pairs;  // set: exactly these pairs (ascending), not pair mod N
  std::optional<shard_source> source;             // set when read from a scheduler's environment

  bool owns(std::size_t pair) const {
    if (pairs) return std::binary_search(pairs->begin(), pairs->end(), pair);
    return static_cast<int>(pair % static_cast<std::size_t>(count)) == index - 1;
  }
  std::string to_string() const;  // "2/3"
  bool operator==(const shard&) const = default;
};

inline constexpr int kMaxShards = 10000;

// A whole decimal number of at most 9 characters, nothing around it (a leading '-' is read as a
// sign, for the caller's range check to refuse with its own message); nullopt otherwise. The one
// reading of every count in shard and device options and scheduler variables.
std::optional<int> whole_number(std::string_view s);

// "I/N" with 1 <= I <= N <= kMaxShards; anything else is an input_error naming `option`.
shard parse_shard(std::string_view option, std::string_view text);

}  // namespace mqa::verdict
