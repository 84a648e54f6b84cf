// The operation on a sample of rows and keys, as the comparator judges it. A prefill problem is cut
// (validator/cut) and judged as a problem of its own. A paged problem has keys per
// request: each sampled request is the dense problem of the keys its rows read
// (kernels/cpu/paged.hpp, read_request) cut to its sampled rows and the sampled keys, and the cuts
// are judged together as the comparator judges a paged output (subject::paged): their
// rows (q, weights, windows; no keys) and a cache of one page per row, holding the row's keys at
// the sampled columns, from which the comparator reads each row's key figures. Inside every
// window those are the paged problem's own keys at those columns.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/cut/cut.hpp"

namespace mqa::diagnose {

class judged_problem {
 public:
  judged_problem() = default;
  // Views into its own arrays: moved, never copied.
  judged_problem(judged_problem&&) = default;
  judged_problem& operator=(judged_problem&&) = default;
  judged_problem(const judged_problem&) = delete;
  judged_problem& operator=(const judged_problem&) = delete;

  static judged_problem dense(cut::problem p);
  // One cut per sampled request, in the sample's row order, each over the same keys, heads, dims
  // and formats. Throws std::invalid_argument when they differ.
  static judged_problem by_request(std::vector<cut::problem> requests);

  exact::problem view() const;          // the rows (m = rows, n = keys), with the keys when dense
  const paged::problem* paged() const;  // null when dense
  // The exact logits of every row (o.rows ignored): exact::compute, request by request when paged.
  exact::result compute(const exact::options& o) const;
  // The key codes and scales the rows read: the dense problem's, or each request's in turn.
  std::span<const std::uint8_t> key_codes() const;
  std::span<const float> key_scales() const;

 private:
  cut::problem rows_;
  std::vector<cut::problem> requests_;
  std::vector<std::uint8_t> cache_, codes_;
  std::vector<float> scales_;
  std::vector<std::int32_t> table_, lens_;
  std::optional<paged::problem> paged_;
};

}  // namespace mqa::diagnose
