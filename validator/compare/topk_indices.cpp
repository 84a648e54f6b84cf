#include "topk_indices.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"

namespace mqa::compare {
namespace {

constexpr std::array<finding_class, 5> kIndexClasses{finding_class::topk_outside_window, finding_class::topk_duplicate,
                                                     finding_class::topk_padding, finding_class::topk_inadmissible,
                                                     finding_class::topk_unsorted};
constexpr std::size_t kOutside = 0, kDuplicate = 1, kPadding = 2, kInadmissible = 3, kUnsorted = 4;

constexpr std::array<std::string_view, 5> kIndexClassSentences{
    "indices outside the row's window [ks, ke) (not the -1 padding)",
    "a key selected twice in one row",
    "-1 padding missing where the window holds fewer than k keys, or -1 where a key was due",
    "a dropped key certainly ranks above a kept one: its exact lower end is above the kept key's upper end under "
    "the contract's bound, so no kernel honouring it keeps one and drops the other",
    "indices out of the descending order the convention promises, beyond ties the bounds allow",
};

std::string shown_value(double x) { return fmt::format("{:.9g}", x); }
// An interval's end: +inf's interval sits at the greatest double, just below NaN's (interval_of).
std::string shown_end(double x) {
  return x == std::numeric_limits<double>::max() ? std::string("inf") : shown_value(x);
}

}  // namespace

read_indices read_topk_indices(const std::filesystem::path& file, std::int64_t rows) {
  const io::npy_header h = io::read_npy_header(file);
  const bool int32 = h.typestring == "<i4", int64 = h.typestring == "<i8";
  if (!(int32 || int64) || h.shape.size() != 2 || static_cast<std::int64_t>(h.shape[0]) != rows || h.shape[1] == 0)
    throw input_error(fmt::format("{}: top-k indices must be int32 or int64 [{}, k] with k >= 1 (one row per query "
                                  "row of the bundle; -1 pads short windows); found {}",
                                  file.string(), rows, io::describe(h)));
  read_indices out;
  out.k = static_cast<std::int64_t>(h.shape[1]);
  if (int64) {
    out.values = io::read_npy_vector<std::int64_t>(file);
  } else {
    const std::vector<std::int32_t> narrow = io::read_npy_vector<std::int32_t>(file);
    out.values.assign(narrow.begin(), narrow.end());
  }
  return out;
}

void indices_tallies::add(std::size_t c, std::int64_t row, std::int64_t col, double expected, double actual,
                          double bound, std::string evidence) {
  first_row& t = tallies_[c];
  if (t.count++ == 0 || std::pair(row, col) < std::pair(t.row, t.col)) {
    t.row = row, t.col = col, t.expected = expected, t.actual = actual, t.bound = bound;
    t.evidence = std::move(evidence);
  }
}

std::vector<std::int64_t> indices_tallies::judge_structure(std::int64_t row, std::int64_t begin, std::int64_t end,
                                                           std::int64_t ks, std::span<const std::int64_t> entries,
                                                           const kernels::topk_convention& convention) {
  std::vector<std::int64_t> sorted_keys;
  return structure(row, begin, end, ks, entries, convention, sorted_keys);
}

std::vector<std::int64_t> indices_tallies::structure(std::int64_t row, std::int64_t begin, std::int64_t end,
                                                     std::int64_t ks, std::span<const std::int64_t> entries,
                                                     const kernels::topk_convention& convention,
                                                     std::vector<std::int64_t>& sorted_keys) {
  const std::int64_t width = end - begin;
  const auto k = static_cast<std::int64_t>(entries.size());
  const std::int64_t due = std::min(k, width);  // keys the row must select
  const std::int64_t base = convention.columns == kernels::columns_layout::relative ? ks : 0;
  std::int64_t padding = 0;
  std::vector<std::int64_t> kept;  // in-window keys, in the kernel's order
  kept.reserve(entries.size());
  bool outside = false;
  for (std::size_t t = 0; t < entries.size(); ++t) {
    const std::int64_t entry = entries[t];
    if (entry == -1) {
      ++padding;
      continue;
    }
    // An entry no window could hold (a hostile file's 2^63 - 1, say) is outside before any sum.
    const bool representable = entry > -(std::int64_t{1} << 62) && entry < (std::int64_t{1} << 62);
    const std::int64_t key = representable ? entry + base : -1;
    if (!representable || key < begin || key >= end) {
      if (!outside)
        add(kOutside, row, static_cast<std::int64_t>(t), -INFINITY, static_cast<double>(entry), 0,
            fmt::format("row {} slot {} holds {} ({} columns): key {}, outside the window [{}, {})", row, t, entry,
                        kernels::to_string(convention.columns), key, begin, end));
      outside = true;
      continue;
    }
    kept.push_back(key);
  }
  sorted_keys = kept;
  std::sort(sorted_keys.begin(), sorted_keys.end());
  const auto repeat = std::adjacent_find(sorted_keys.begin(), sorted_keys.end());
  if (repeat != sorted_keys.end()) {
    const std::int64_t key = *repeat;
    // The exact value is the evidence where the row was judged; judge() fills it in.
    add(kDuplicate, row, key, NAN, NAN, 0,
        fmt::format("row {} selects key {} {} times", row, key, std::count(kept.begin(), kept.end(), key)));
  }
  if (padding != k - due)
    add(kPadding, row, begin, 0, static_cast<double>(padding), 0,
        fmt::format("row {}: window [{}, {}) of {} keys, k = {}: {} entries of -1 where {} are due", row, begin, end,
                    width, k, padding, k - due));
  return kept;
}

void indices_tallies::judge(const indices_row& r, const kernels::topk_convention& convention) {
  const std::int64_t width = r.end - r.begin;
  const std::int64_t due = std::min(static_cast<std::int64_t>(r.entries.size()), width);
  std::vector<std::int64_t> sorted_keys;
  const std::vector<std::int64_t> kept = structure(r.row, r.begin, r.end, r.ks, r.entries, convention, sorted_keys);
  const auto repeat = std::adjacent_find(sorted_keys.begin(), sorted_keys.end());
  if (repeat != sorted_keys.end() && tallies_[kDuplicate].row == r.row && tallies_[kDuplicate].col == *repeat) {
    const double value = r.exact[static_cast<std::size_t>(*repeat - r.begin)];
    tallies_[kDuplicate].expected = tallies_[kDuplicate].actual = value;
  }
  sorted_keys.erase(std::unique(sorted_keys.begin(), sorted_keys.end()), sorted_keys.end());

  auto at = [&](std::int64_t key) { return static_cast<std::size_t>(key - r.begin); };
  // The kept set K (distinct in-window keys, s of them) with r = k' - s slots left free by a
  // duplicate, a misplaced -1 or an index outside the window: those slots are the faults already
  // found, and K itself is faulty only when no admissible set of k' keys contains it.
  // Theorem: K extends to an admissible set exactly when at most r dropped keys have a lower end
  // above t = min over K of u (the weakest kept key's upper end). Only if: a superset of k' keys
  // leaves out one of r + 1 such keys d, and min_S u <= t < l_d. If: add those keys (each upper end
  // >= its lower end > t) and fill the rest with the dropped keys of the largest upper ends; a key
  // o left out has l_o <= t, and l_o <= u_f for every filler f, since l_o > u_f would make
  // u_o > u_f and o would have been taken first. With r = 0 (every slot a kept key) it is
  // topk.hpp's rule: the weakest kept key against the strongest dropped one.
  const auto distinct = static_cast<std::int64_t>(sorted_keys.size());
  const std::int64_t free_slots = std::max<std::int64_t>(due - distinct, 0);
  if (distinct > 0 && distinct + free_slots < width) {
    std::int64_t weakest = sorted_keys.front();
    for (const std::int64_t key : sorted_keys)
      if (r.intervals[at(key)].upper < r.intervals[at(weakest)].upper) weakest = key;
    std::vector<std::int64_t> dropped;
    dropped.reserve(static_cast<std::size_t>(width - distinct));
    for (std::int64_t key = r.begin, s = 0; key < r.end; ++key) {
      while (s < distinct && sorted_keys[static_cast<std::size_t>(s)] < key) ++s;
      if (s < distinct && sorted_keys[static_cast<std::size_t>(s)] == key) continue;
      dropped.push_back(key);
    }
    // The dropped key with the (r + 1)-th highest lower end (lowest key among equal lower ends).
    const auto nth = dropped.begin() + free_slots;
    std::nth_element(dropped.begin(), nth, dropped.end(), [&](std::int64_t x, std::int64_t y) {
      const double lx = r.intervals[at(x)].lower, ly = r.intervals[at(y)].lower;
      return lx > ly || (lx == ly && x < y);
    });
    const std::int64_t strongest = *nth;
    const topk::interval& kept_one = r.intervals[at(weakest)];
    if (r.intervals[at(strongest)].lower > kept_one.upper) {
      const topk::interval& dropped_one = r.intervals[at(strongest)];
      // The dropped key's allowance; none at an exact NaN or infinity (its interval is a point).
      const double allowance = (dropped_one.upper - dropped_one.lower) / 2;
      const std::string others =
          free_slots == 0 ? std::string()
                          : fmt::format(" and {} other{} at least as high with only {} slot{} free", free_slots,
                                        free_slots == 1 ? "" : "s", free_slots, free_slots == 1 ? "" : "s");
      add(kInadmissible, r.row, strongest, r.exact[at(strongest)], r.exact[at(weakest)],
          std::isfinite(allowance) ? allowance : 0,
          fmt::format("row {} drops key {} (exact {}, lower end {}){} and keeps key {} (exact {}, upper end {})",
                      r.row, strongest, shown_value(r.exact[at(strongest)]), shown_end(dropped_one.lower), others,
                      weakest, shown_value(r.exact[at(weakest)]), shown_end(kept_one.upper)));
    }
  }
  // Descending order is possible exactly when values within the intervals can be chosen in the
  // listed order, each at most the one before: greedily each key takes min(its upper end, the value
  // before), which is the least upper end listed so far, so the order is possible iff no key's
  // lower end is above the least upper end of the keys listed before it (not only the one just
  // before: a wide interval between two keys hides their inversion from adjacent pairs). Ties are
  // allowed: a kernel may produce equal values and list them either way.
  if (convention.sorted && !kept.empty()) {
    std::size_t least = 0;  // the earlier key with the least upper end
    for (std::size_t t = 1; t < kept.size(); ++t) {
      const topk::interval& earlier = r.intervals[at(kept[least])];
      const topk::interval& later = r.intervals[at(kept[t])];
      if (later.lower > earlier.upper) {
        add(kUnsorted, r.row, kept[t], r.exact[at(kept[t])], r.exact[at(kept[least])], 0,
            fmt::format("row {} lists key {} (exact {}, lower end {}) after key {} (exact {}, upper end {})", r.row,
                        kept[t], shown_value(r.exact[at(kept[t])]), shown_end(later.lower), kept[least],
                        shown_value(r.exact[at(kept[least])]), shown_end(earlier.upper)));
        break;
      }
      if (later.upper < earlier.upper) least = t;
    }
  }
}

void indices_tallies::merge(const indices_tallies& other) {
  for (std::size_t c = 0; c < kClasses; ++c) {
    const first_row& o = other.tallies_[c];
    if (o.count == 0) continue;
    first_row& t = tallies_[c];
    const std::int64_t total = t.count + o.count;
    if (t.count == 0 || std::pair(o.row, o.col) < std::pair(t.row, t.col)) t = o;
    t.count = total;
  }
}

void indices_tallies::append_findings(std::vector<finding>& out) const {
  for (std::size_t c = 0; c < kClasses; ++c) {
    const first_row& t = tallies_[c];
    if (t.count == 0) continue;
    finding f;
    f.kind = kIndexClasses[c];
    f.count = t.count;
    f.first_row = t.row;
    f.first_col = t.col;
    f.expected_bits = std::bit_cast<std::uint32_t>(static_cast<float>(t.expected));
    f.actual_bits = std::bit_cast<std::uint32_t>(static_cast<float>(t.actual));
    f.bound = t.bound;
    f.detail = fmt::format("{} ({} row{}; first: {})", kIndexClassSentences[c], t.count, t.count == 1 ? "" : "s",
                           t.evidence);
    out.push_back(std::move(f));
  }
}

}  // namespace mqa::compare
