// How decided a row's top-k is under a contract. Each in-window key j has an exact value x_j and
// an allowance b_j (the contract's bound there), so a kernel honouring the contract may give it any
// value in I_j = [l_j, u_j] = [x_j - b_j, x_j + b_j]. A set S of k' = min(k, w) of the row's w keys
// is *admissible* when some such values rank S first (ties broken either way), i.e. (topk.hpp)
//     min over j in S of u_j  >=  max over j not in S of l_j.
//
// Theorem (what every admissible set shares). For a key j:
//   (a) every admissible S contains j  <=>  l_j > u_i for at least w - k' keys i != j;
//   (b) no admissible S contains j     <=>  l_i > u_j for at least k' keys i != j.
// Proof of (a). =>: suppose fewer than w - k' keys lie wholly below j (u_i < l_j); then at least
// k' other keys i have u_i >= l_j. Let S be the k' of them with the largest upper ends. j is out
// of S and l_j <= min_S u. Any other key m out of S has l_m <= min_S u too: were l_m > min_S u, then
// u_m >= l_m > min_S u >= l_j, so m qualified and its upper end beats S's least: it would have been
// taken. So S is admissible and lacks j. <=: with at least w - k' keys wholly below j, a set S of
// k' keys without j leaves out only w - k' - 1 keys besides j, so it keeps one key i wholly below j:
// min_S u <= u_i < l_j <= max over keys out of S of l: S is not admissible.
// (b) is (a) for the values negated and the complement set (w - k' keys kept out of the top k').
// Ties (l_j == u_i) are admissible either way: a kernel may produce equal values and break the
// tie as it likes, so only strict inequalities decide.
//
// I_j is topk::interval_of (interval.hpp): the line ranks as torch.topk does, NaN strictly above
// +inf (a kernel honouring the contract gives a NaN key NaN and a +inf key +inf, and torch.topk
// keeps the NaN first), and an excused overflow leaves the key any value but NaN.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/topk/interval.hpp"

namespace mqa::topk {

enum class key_status : std::uint8_t { must_keep, must_drop, ambiguous };

struct row_decidedness {
  std::int64_t window = 0, k = 0;  // w and k' = min(k, w)
  std::int64_t must_keep = 0, must_drop = 0, ambiguous = 0;
  bool fully_decided() const { return ambiguous == 0; }
};

// Each key's status by the theorem above, in O(w). `status`, where not null, receives one entry
// per key.
row_decidedness decide(std::span<const interval> keys, std::int64_t k, std::vector<key_status>* status = nullptr);

// The summary over rows, as every report shows it. Empty (rows == 0) where no row had a window.
struct decidedness_summary {
  std::int64_t rows = 0;             // rows with a non-empty window
  std::int64_t rows_fully_decided = 0;
  std::int64_t must_keep = 0, must_drop = 0, ambiguous = 0;  // keys, over every row
  double median_ambiguous = 0;       // ambiguous keys per row (the mean of the middle two for even rows)
  // The same over the rows whose window holds more than k keys: there the top-k is a selection (a
  // shorter window keeps every key, decided whatever the contract).
  std::int64_t rows_ranked = 0, rows_ranked_fully_decided = 0;
  double median_ambiguous_ranked = 0;
  std::int64_t worst_row = -1, worst_ambiguous = 0, worst_k = 0;  // the row with the most ambiguous keys (lowest index)
};

// rows: (row index, its decidedness), any order.
decidedness_summary summarise(std::vector<std::pair<std::int64_t, row_decidedness>> rows);

}  // namespace mqa::topk
