// A top-k index kernel judged: each row's indices against the exact values of its window under the
// contract's bound (reference/topk/decidedness.hpp), whatever kernel computed the logits they were
// taken from. What is wrong with a row's indices, checked in this order:
//   topk-outside-window  an entry other than -1 names no key of [ks, ke) (after adding ks for a
//                        relative convention)
//   topk-duplicate       a key twice
//   topk-padding         the number of -1 entries is not k - min(k, window): padding missing where
//                        the window is short, or -1 where a key was due
//   topk-inadmissible    the kept keys fit no admissible set: with s distinct kept keys and
//                        r = min(k, window) - s slots lost to the faults above, more than r dropped
//                        in-window keys have a lower end l_d above the weakest kept key's upper end
//                        u_a (r = 0: one such key). No values the contract allows rank a above
//                        them all, so no kernel honouring it keeps a and drops them (topk.hpp's
//                        theorem; the proof for r > 0 is in topk_indices.cpp). A duplicate or a
//                        misplaced -1 alone is its own class, not this one.
//   topk-unsorted        the convention promises descending order and no values within the bounds
//                        are descending in the listed order: a key's lower end is above the least
//                        upper end of the keys listed before it (ties allowed)
// Counts are rows; a finding's first row carries the evidence (keys, exact values, bounds).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "kernels/variant.hpp"
#include "reference/topk/decidedness.hpp"
#include "validator/compare/finding.hpp"

namespace mqa::compare {

// A top-k index kernel's output read from an .npy: int32 or int64 [rows, k], k >= 1, widened to
// int64 (k is the second extent). Anything else is an input_error naming the file, what it holds
// and what is accepted.
struct read_indices {
  std::vector<std::int64_t> values;
  std::int64_t k = 0;
};
read_indices read_topk_indices(const std::filesystem::path& file, std::int64_t rows);

// Row i's inputs to the judgement: its window [begin, end) (clamped to the keys), the kernel's
// entries, and for each in-window key (begin + t) its exact value (the evidence; NaN kept) and its
// interval (where the ranking lives: NaN strictly above +inf, topk::interval_of). A relative entry counts from ks as given, even where ks < 0 (the window then clamped):
// DeepGEMM's relative columns and vLLM's "index minus ks" both count from it.
struct indices_row {
  std::int64_t row = 0, begin = 0, end = 0;
  std::int64_t ks = 0;
  std::span<const std::int64_t> entries;
  std::span<const double> exact;
  std::span<const topk::interval> intervals;
};

// The five classes' tallies over the rows one thread judged; merged, then turned into findings.
class indices_tallies {
 public:
  void judge(const indices_row& r, const kernels::topk_convention& convention);
  // The three classes that need only the window and k (outside, duplicate, padding), for a row
  // judged without exact values (one a modelled contract's sample left out). Returns the entries'
  // in-window keys in the kernel's order.
  std::vector<std::int64_t> judge_structure(std::int64_t row, std::int64_t begin, std::int64_t end, std::int64_t ks,
                                            std::span<const std::int64_t> entries,
                                            const kernels::topk_convention& convention);
  void merge(const indices_tallies& other);
  // One finding per class present, in class order.
  void append_findings(std::vector<finding>& out) const;

 private:
  struct first_row {
    std::int64_t count = 0;  // rows
    std::int64_t row = -1, col = -1;
    double expected = 0, actual = 0, bound = 0;
    std::string evidence;
  };
  static constexpr std::size_t kClasses = 5;
  // judge_structure's work, also leaving the in-window keys sorted (repeats kept) in `sorted_keys`.
  std::vector<std::int64_t> structure(std::int64_t row, std::int64_t begin, std::int64_t end, std::int64_t ks,
                                      std::span<const std::int64_t> entries,
                                      const kernels::topk_convention& convention,
                                      std::vector<std::int64_t>& sorted_keys);
  void add(std::size_t c, std::int64_t row, std::int64_t col, double expected, double actual, double bound,
           std::string evidence);
  std::array<first_row, kClasses> tallies_{};
};

}  // namespace mqa::compare
