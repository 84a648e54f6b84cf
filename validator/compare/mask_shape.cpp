#include "mask_shape.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

namespace mqa::compare {
namespace {

bool contiguous(const std::vector<std::int64_t>& v) {
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i] != v[i - 1] + 1) return false;
  return true;
}

// How much of a displacement a row can show: a start cannot move below 0 nor an end past n, and
// a displacement that covers the whole window darkens it (whole_window_dark rows, checked apart).
std::int64_t visible_start(std::int64_t shift, const mask_shape& r) { return shift < 0 ? -std::min(-shift, r.begin) : shift; }
std::int64_t visible_end(std::int64_t shift, std::int64_t n, const mask_shape& r) {
  return shift > 0 ? std::min(shift, n - r.end) : shift;
}

// The displacement of largest magnitude that nonempty rows show at one edge; 0 when none does,
// nullopt when two rows show opposite directions, or when every row showing it reaches key 0 (or
// key n - 1) with its leaks: a window filled out to the array's end is a fill, not a shift.
template <class Get, class Reaches>
std::optional<std::int64_t> widest(const std::vector<mask_shape>& rows, Get get, Reaches reaches_end_of_array) {
  std::int64_t best = 0;
  for (const auto& r : rows) {
    if (r.end == r.begin || r.whole_window_dark) continue;
    const std::int64_t s = get(r);
    if (s == 0) continue;
    if (best != 0 && (s > 0) != (best > 0)) return std::nullopt;
    if (std::llabs(s) > std::llabs(best)) best = s;
  }
  if (best == 0) return best;
  for (const auto& r : rows)
    if (r.end > r.begin && !r.whole_window_dark && get(r) == best && !reaches_end_of_array(r, best)) return best;
  return std::nullopt;
}

}  // namespace

judged_window judged_window_of(const exact::problem& p, std::int64_t i) {
  const exact::window w = exact::clamped_window(p, i);
  if (!w.empty()) return {w.begin, w.end};
  const std::int64_t at = std::clamp<std::int64_t>(p.ks[static_cast<std::size_t>(i)], 0, p.n);
  return {at, at};
}

bool edge_shaped(const std::vector<std::int64_t>& holes, std::int64_t b, std::int64_t e) {
  std::size_t prefix = 0;
  while (prefix < holes.size() && holes[prefix] == b + static_cast<std::int64_t>(prefix)) ++prefix;
  std::size_t suffix = 0;
  while (suffix < holes.size() - prefix && holes[holes.size() - 1 - suffix] == e - 1 - static_cast<std::int64_t>(suffix))
    ++suffix;
  return prefix + suffix == holes.size();
}

mask_shape shape_of(const std::vector<std::int64_t>& leaks, const std::vector<std::int64_t>& holes, std::int64_t b,
                    std::int64_t e) {
  mask_shape s{true, 0, 0, b, e, false};
  if (leaks.empty() && holes.empty()) return s;
  mask_shape irregular = s;
  irregular.regular = false;
  std::vector<std::int64_t> before, after;
  for (const auto j : leaks) (j < b ? before : after).push_back(j);
  if (!before.empty()) {
    if (before.back() != b - 1 || !contiguous(before)) return irregular;
    s.start_shift = -static_cast<std::int64_t>(before.size());
  }
  if (!after.empty()) {
    if (after.front() != e || !contiguous(after)) return irregular;
    s.end_shift = static_cast<std::int64_t>(after.size());
  }
  if (!holes.empty()) {
    if (static_cast<std::int64_t>(holes.size()) == e - b) {  // the whole window is dark: no edge to see
      if (!leaks.empty()) return irregular;
      s.whole_window_dark = true;
      return s;
    }
    if (!edge_shaped(holes, b, e)) return irregular;
    std::size_t prefix = 0;
    while (prefix < holes.size() && holes[prefix] == b + static_cast<std::int64_t>(prefix)) ++prefix;
    const std::size_t suffix = holes.size() - prefix;
    if (prefix > 0) {
      if (s.start_shift != 0) return irregular;
      s.start_shift = static_cast<std::int64_t>(prefix);
    }
    if (suffix > 0) {
      if (s.end_shift != 0) return irregular;
      s.end_shift = -static_cast<std::int64_t>(suffix);
    }
  }
  return s;
}

std::optional<window_shift> common_shift(const std::vector<mask_shape>& rows, std::int64_t n) {
  for (const auto& r : rows)
    if (!r.regular) return std::nullopt;
  const auto start = widest(
      rows, [](const mask_shape& r) { return r.start_shift; },
      [](const mask_shape& r, std::int64_t s) { return s < 0 && r.begin + s == 0; });
  const auto end = widest(
      rows, [](const mask_shape& r) { return r.end_shift; },
      [n](const mask_shape& r, std::int64_t s) { return s > 0 && r.end + s == n; });
  if (!start || !end || (*start == 0 && *end == 0)) return std::nullopt;
  const window_shift shift{*start, *end};
  for (const auto& r : rows) {
    const std::int64_t length = r.end - r.begin;
    const std::int64_t want_start = visible_start(shift.start, r), want_end = visible_end(shift.end, n, r);
    if (r.whole_window_dark) {
      if (!(shift.start >= length || -shift.end >= length)) return std::nullopt;
    } else if (length == 0) {
      // An empty window shows nothing, or what it can of the shift (j <= ke writes key ke of a
      // window with ks == ke, while an inverted window stays empty).
      if ((r.start_shift != 0 && r.start_shift != want_start) || (r.end_shift != 0 && r.end_shift != want_end))
        return std::nullopt;
    } else {
      if (shift.start >= length || -shift.end >= length) return std::nullopt;  // it should be dark
      if (r.start_shift != want_start || r.end_shift != want_end) return std::nullopt;
    }
  }
  return shift;
}

std::string describe(const window_shift& shift) {
  std::string s;
  if (shift.start != 0)
    s += fmt::format("window start shifted by {:+d} ({})", shift.start,
                     shift.start < 0 ? "keys before ks are written" : "the first keys of the window are -inf");
  if (shift.end != 0) {
    if (!s.empty()) s += "; ";
    s += fmt::format("window end shifted by {:+d} ({})", shift.end,
                     shift.end == 1 ? "ke read as inclusive" : shift.end > 0 ? "keys at and after ke are written" : "the last keys are -inf");
  }
  return s;
}

}  // namespace mqa::compare
