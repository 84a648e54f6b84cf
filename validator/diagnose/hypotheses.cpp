#include "hypotheses.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <set>
#include <string>

#include "kernels/cpu/planted.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/fp8/bfloat16.hpp"
#include "reference/mma/instruction.hpp"

namespace mqa::diagnose {
namespace {

using compare::finding_class;
using kernels::cpu::model_config;
namespace cpu = kernels::cpu;

const std::vector<finding_class> kMask{finding_class::mask_leak, finding_class::mask_hole, finding_class::mask_shift,
                                       finding_class::topk_mismatch};
const std::vector<finding_class> kUnwritten{finding_class::unwritten};
const std::vector<finding_class> kValues{finding_class::error_bound, finding_class::scale_factor, finding_class::nan,
                                         finding_class::inf, finding_class::topk_mismatch};
const std::vector<finding_class> kEverything{
    finding_class::mask_leak, finding_class::mask_hole, finding_class::mask_shift,  finding_class::nan,
    finding_class::inf,       finding_class::error_bound, finding_class::scale_factor, finding_class::topk_mismatch,
    finding_class::unwritten};

bool is_poison(float x) { return std::bit_cast<std::uint32_t>(x) == compare::kPoisonBits; }

const exact::problem& full(const situation& s) { return *s.e.problem; }

// The rows a dense problem's planted bug sees together: the whole problem, or for a paged problem
// one request's (the model's paged twin runs each request as a problem of its own).
std::int64_t rows_together(const situation& s) { return s.e.paged ? s.e.paged->next_n : full(s).m; }

// The keys the hypotheses may look at: a prefill problem's, or the keys a paged problem's sampled
// rows read at the sampled columns.
std::span<const std::uint8_t> key_codes(const situation& s) {
  return s.e.paged ? s.s.problem.key_codes() : full(s).k;
}
std::span<const float> key_scales(const situation& s) {
  return s.e.paged ? s.s.problem.key_scales() : full(s).k_scale;
}

template <class Predicate>
bool any_sampled_row(const situation& s, Predicate pred) {
  return std::any_of(s.s.at.rows.begin(), s.s.at.rows.end(), pred);
}

bool any_nonempty_window(const situation& s) {
  return any_sampled_row(s, [&](std::int64_t i) { return !exact::clamped_window(full(s), i).empty(); });
}

// K / centre over the sample's finite, nonzero in-window pairs: a format mix-up or a constant
// factor shows as one ratio shared by nearly all of them.
struct ratio_stats {
  std::size_t count = 0;
  double median = NAN;
  double share_at_median = 0;  // within a relative 2^-10
};

ratio_stats ratios(const situation& s) {
  const std::vector<float>& centre = s.s.judged_centre().logits;
  std::vector<double> r;
  for (std::size_t x = 0; x < centre.size(); ++x) {
    const float c = centre[x], k = s.s.kernel[x];
    if (std::isfinite(c) && c != 0 && std::isfinite(k) && k != 0) r.push_back(static_cast<double>(k) / c);
  }
  ratio_stats out;
  out.count = r.size();
  if (r.empty()) return out;
  std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2), r.end());
  out.median = r[r.size() / 2];
  const auto near = std::count_if(r.begin(), r.end(), [&](double v) { return std::fabs(v / out.median - 1) <= 0x1p-10; });
  out.share_at_median = static_cast<double>(near) / static_cast<double>(r.size());
  return out;
}

// The shortest decimal (up to 7 significant digits) within a relative 2^-14 of c: a factor a
// person wrote ("1.001"), not the noise of rounding around it.
std::string short_decimal(double c) {
  for (int digits = 1; digits <= 7; ++digits) {
    const std::string text = fmt::format("{:.{}g}", c, digits);
    if (std::fabs(std::stod(text) / c - 1) <= 0x1p-14) return text;
  }
  return fmt::format("{:.7g}", c);
}

bool has_code(const std::span<const std::uint8_t> codes, std::initializer_list<std::uint8_t> wanted) {
  return std::any_of(codes.begin(), codes.end(),
                     [&](std::uint8_t c) { return std::find(wanted.begin(), wanted.end(), c) != wanted.end(); });
}

std::string_view name_of(fp8::format f) { return fp8::traits(f).name; }

// ---- output side -----------------------------------------------------------------------------

std::vector<candidate> outside_fill(const situation& s) {
  if (s.e.contract.mask != kernels::masking::clean) return {};
  return {{"outside-not-written", "nothing written outside the windows (the -inf fill of clean_logits skipped)",
           [](model_config& c) { c.outside = cpu::outside_fill::nothing; }},
          {"zero-fill", "0 written outside the windows instead of -inf (clean_logits not honoured)",
           [](model_config& c) { c.outside = cpu::outside_fill::zero; }}};
}

std::vector<candidate> skipped_empty_rows(const situation& s) {
  if (!any_sampled_row(s, [&](std::int64_t i) { return exact::clamped_window(full(s), i).empty(); })) return {};
  return {{"skip-empty-rows", "rows with an empty window (ks >= ke) returning before they write anything",
           [](model_config& c) { c.skip_empty_rows = true; }}};
}

// The same trailing columns unwritten in every sampled row: a last partial tile never stored. Every
// tile width T with N % T equal to their count reproduces it alike; the sentence names the powers
// of two among them.
std::vector<candidate> unstored_tail(const situation& s) {
  const exact::problem& p = full(s);
  std::int64_t tail = p.n;
  for (const auto i : s.s.at.rows) {
    const float* row = s.e.output.row(i);
    std::int64_t run = 0;
    while (run < p.n && is_poison(row[p.n - 1 - run])) ++run;
    tail = std::min(tail, run);
  }
  if (tail == 0) return {};
  const std::int64_t stored = p.n - tail;
  if (stored == 0)  // N below the tile width: every T > N leaves every column unstored
    return {{"tail-tile",
             fmt::format("the last partial tile never stored: N = {} is below the tile width, so nothing is", p.n),
             [n = p.n](model_config& c) { c.tail_block = n + 1; }}};
  std::int64_t width = 0;
  std::string powers;
  for (std::int64_t t = tail + 1; t <= stored; ++t) {
    if (stored % t != 0) continue;
    if (width == 0) width = t;
    if (std::has_single_bit(static_cast<std::uint64_t>(t)) && t <= 4096) powers += (powers.empty() ? "" : ", ") + std::to_string(t);
  }
  if (width == 0) return {};
  return {{"tail-tile",
           fmt::format("the last partial tile never stored: columns {} to {} unwritten (tile width T with N % T = {}{})",
                       stored, p.n - 1, tail, powers.empty() ? "" : ": T = " + powers),
           [width](model_config& c) { c.tail_block = width; }}};
}

// Offsets computed in too few bits: stores past 2^k bytes wrap, so the first unwritten element
// sits at the first offset past the wrap (BUGCLASSES 17).
std::vector<candidate> wrapped_offsets(const situation& s) {
  const auto f = std::find_if(s.judged.findings.begin(), s.judged.findings.end(),
                              [](const compare::finding& x) { return x.kind == finding_class::unwritten; });
  if (f == s.judged.findings.end() || f->first_row < 0) return {};
  // The model's paged twin stores each request from its first row's address (paged.hpp).
  const std::int64_t row = s.e.paged ? f->first_row % s.e.paged->next_n : f->first_row;
  const auto bytes = static_cast<std::uint64_t>((row * s.e.output.stride + f->first_col) * 4);
  const std::uint64_t limit = std::bit_floor(bytes);
  if (limit < 64) return {};
  return {{"offset-wrap",
           fmt::format("byte offsets wrapping at 2^{} (row * stride * 4 overflowing its integer type): nothing from "
                       "element ({}, {}) on is stored where it belongs",
                       std::countr_zero(limit), f->first_row, f->first_col),
           [limit](model_config& c) { c.offset_limit_bytes = static_cast<std::int64_t>(limit); }}};
}

// ---- windows -----------------------------------------------------------------------------------

candidate window_candidate(std::string cause, std::string what,
                           std::function<exact::window(const exact::problem&, std::int64_t)> window) {
  return {std::move(cause), std::move(what), [window](model_config& c) { c.window_of = window; }};
}

// Every other window edge off by one.
std::vector<candidate> shifted_windows(const situation& s) {
  if (!any_nonempty_window(s)) return {};
  auto edge = [](std::int64_t begin_by, std::int64_t end_by) {
    return [begin_by, end_by](const exact::problem& p, std::int64_t i) {
      exact::window w = exact::clamped_window(p, i);
      if (w.empty()) return w;
      w.begin = std::clamp<std::int64_t>(w.begin + begin_by, 0, p.n);
      w.end = std::clamp<std::int64_t>(w.end + end_by, 0, p.n);
      return w;
    };
  };
  std::vector<candidate> out{window_candidate("end-one-short", "a window end one short (key ke - 1 never written)", edge(0, -1))};
  // Only where a window starts past key 0 (a paged problem's never do).
  if (any_sampled_row(s, [&](std::int64_t i) { return exact::clamped_window(full(s), i).begin > 0; }))
    out.push_back(window_candidate("start-one-early", "a window start one early (key ks - 1 written too)", edge(-1, 0)));
  out.push_back(window_candidate("start-one-late", "a window start one late (key ks never written)", edge(1, 0)));
  return out;
}

std::vector<candidate> aligned_starts(const situation& s) {
  std::vector<candidate> out;
  for (const std::int64_t a : {4, 8, 16, 32, 64}) {
    const bool shows = any_sampled_row(s, [&](std::int64_t i) {
      const exact::window w = exact::clamped_window(full(s), i);
      return !w.empty() && w.begin % a != 0;
    });
    if (!shows) break;
    out.push_back(window_candidate(
        "ks-aligned-down",
        fmt::format("ks aligned down to a multiple of {} without the gap before it cleaned (keys from the aligned "
                    "start written)",
                    a),
        [a](const exact::problem& p, std::int64_t i) { return cpu::aligned_down_window(p, i, a); }));
  }
  return out;
}

std::vector<candidate> other_rows_windows(const situation& s) {
  std::vector<candidate> out;
  if (rows_together(s) > 1) {
    // What a row index one off reads: a paged request's context length, a ragged batch's cu_seqlen.
    const std::string why = s.e.paged ? "(its context length indexed off by one)"
                                      : "(a ragged batch's cu_seqlen indexed off by one)";
    out.push_back(window_candidate("previous-row-window",
                                   fmt::format("each row{} using the previous row's window {}",
                                               s.e.paged ? " of a request" : "", why),
                                   cpu::previous_row_window));
    out.push_back(window_candidate("next-row-window", "each row but the last using the next row's window " + why,
                                   cpu::next_row_window));
  }
  const bool negative = any_sampled_row(s, [&](std::int64_t i) {
    return full(s).ks[static_cast<std::size_t>(i)] < 0 || full(s).ke[static_cast<std::size_t>(i)] < 0;
  });
  if (negative)
    out.push_back(window_candidate("unsigned-window",
                                   "window bounds read as unsigned 32-bit integers (-1 becomes 4294967295: the row "
                                   "goes dark)",
                                   cpu::unsigned_window));
  return out;
}

candidate paged_window_candidate(std::string cause, std::string what, cpu::paged_window w) {
  candidate c(std::move(cause), std::move(what), [](model_config&) {});
  c.read = [w](cpu::paged_reading& r) { r.window = w; };
  return c;
}

// Paged decode's window bugs, where they move a sampled row's window end: a 1-D context length masked
// without next_n (ROCm/aiter#4290; with next_n = 1 that is an inclusive end, and the sentence
// names both), and every row of a request masked with its last row's length.
std::vector<candidate> paged_windows(const situation& s) {
  if (!s.e.paged) return {};
  const paged::problem& p = *s.e.paged;
  auto moves = [&](cpu::paged_window w) {
    cpu::paged_reading r;
    r.window = w;
    return any_sampled_row(s, [&](std::int64_t i) { return cpu::kernel_window_end(r, p, i) != paged::window_end(p, i); });
  };
  std::vector<candidate> out;
  if (moves(cpu::paged_window::without_next_n))
    out.push_back(paged_window_candidate("paged-window-without-next-n",
                                         fmt::format("1-D context lengths masked as k <= L - t without next_n = {} "
                                                     "(ROCm/aiter#4290: row t of a request sees key L - t)",
                                                     p.next_n),
                                         cpu::paged_window::without_next_n));
  if (moves(cpu::paged_window::last_row))
    out.push_back(paged_window_candidate("paged-shared-context-length",
                                         "every row of a request masked with its last row's context length (one "
                                         "length per request, not each row's own)",
                                         cpu::paged_window::last_row));
  return out;
}

// The named bugs of BUGCLASSES 11, 14, 15, 19 and paged decode first, then every edge off by one: on
// some layouts they coincide (on a causal layout the previous row's window is the row's own with
// its end one short), and the sentence then names both.
std::vector<candidate> windows(const situation& s) {
  std::vector<candidate> out;
  if (any_nonempty_window(s))
    out.push_back(window_candidate("inclusive-end", "a window end read as inclusive (key ke written too)",
                                   cpu::inclusive_end_window));
  for (auto* more : {paged_windows, aligned_starts, other_rows_windows, shifted_windows})
    for (auto& c : more(s)) out.push_back(std::move(c));
  return out;
}

// ---- paged cache reading --------------------------------------------------------------------

// An in-window element of the sample: where it sits in the sample, and the logical and physical
// block its key is read from.
struct read_element {
  std::size_t at;
  std::int64_t key, logical, block;
};

template <class Visit>
void for_each_read(const situation& s, Visit visit) {
  const paged::problem& p = *s.e.paged;
  const std::vector<std::int64_t>& rows = s.s.at.rows;
  const std::vector<std::int64_t>& keys = s.s.at.keys;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const exact::window w = exact::clamped_window(full(s), rows[r]);
    const std::int64_t request = rows[r] / p.next_n;
    for (std::size_t c = 0; c < keys.size(); ++c) {
      const std::int64_t j = keys[c];
      if (j < w.begin || j >= w.end) continue;
      const std::int64_t logical = j / p.block_kv;
      visit(read_element{r * keys.size() + c, j, logical,
                         p.block_table[static_cast<std::size_t>(request * p.max_blocks + logical)]});
    }
  }
}

candidate reading_candidate(std::string cause, std::string what, std::function<void(cpu::paged_reading&)> read) {
  candidate c(std::move(cause), std::move(what), [](model_config&) {});
  c.read = std::move(read);
  return c;
}

// ROCm/aiter#4774, vllm#52109: a block's byte offset (block x page stride) held in a signed 32-bit
// integer; past 2^31 an AMD buffer load returns zeros, so every logit of such a block's keys is 0.
// Read off the output: the blocks whose keys all came out 0 where the exact logits are not, above
// a power of two that no block read right reaches.
std::vector<candidate> block_offset_overflow(const situation& s) {
  const paged::problem& p = *s.e.paged;
  const std::vector<float>& centre = s.s.judged_centre().logits;
  std::set<std::int64_t> right, zeroed;
  for_each_read(s, [&](const read_element& x) {
    const float k = s.s.kernel[x.at], c = centre[x.at];
    if (k != 0.0f) right.insert(x.block);
    else if (c != 0.0f && !std::isnan(c)) zeroed.insert(x.block);
  });
  for (const std::int64_t b : right) zeroed.erase(b);
  if (zeroed.empty()) return {};
  const std::int64_t first = *zeroed.begin();
  const auto limit = std::bit_floor(static_cast<std::uint64_t>(first * p.page_bytes));
  if (limit == 0 || (!right.empty() && static_cast<std::uint64_t>(*right.rbegin() * p.page_bytes) >= limit)) return {};
  return {reading_candidate(
      "paged-block-offset32",
      fmt::format("block byte offsets (block x page stride) overflowing at 2^{}, as a 32-bit one does at 2^31: the "
                  "blocks from there on (physical block {} at byte {} first) read as zeros, as an AMD buffer load "
                  "returns for an out-of-range offset",
                  std::countr_zero(limit), first, first * p.page_bytes),
      [limit](cpu::paged_reading& r) { r.block_offset_overflows_at = static_cast<std::int64_t>(limit); })};
}

// vllm#40991, #50576: only slot 0 of a block is read right; and DeepGEMM's layout against the
// block table ignored, where some block read is not the logical one.
std::vector<candidate> misread_pages(const situation& s) {
  bool past_slot_0 = false, mapped = false;
  for_each_read(s, [&](const read_element& x) {
    past_slot_0 |= x.key % s.e.paged->block_kv != 0;
    mapped |= x.block != x.logical;
  });
  std::vector<candidate> out;
  if (past_slot_0)
    out.push_back(reading_candidate("paged-interleaved-scales",
                                    "each key read as a [head_dim codes][float32 scale] record at slot x (head_dim + "
                                    "4), not as the block's codes followed by its scales (vllm#40991, #50576)",
                                    [](cpu::paged_reading& r) { r.scales_interleaved = true; }));
  if (mapped)
    out.push_back(reading_candidate("paged-logical-blocks",
                                    "the block table ignored: logical block i read as physical block i",
                                    [](cpu::paged_reading& r) { r.logical_blocks = true; }));
  return out;
}

std::vector<candidate> paged_reading_bugs(const situation& s) {
  if (!s.e.paged) return {};
  std::vector<candidate> out = block_offset_overflow(s);
  for (auto& c : misread_pages(s)) out.push_back(std::move(c));
  return out;
}

// ---- inputs ------------------------------------------------------------------------------------

// BUGCLASSES 1: one operand's bytes (or both) read in the sibling format: every value halves or
// doubles, so the ratio to the exact logits is one power of two (2 or 4 either way).
std::vector<candidate> format_mixups(const situation& s) {
  const exact::problem& p = full(s);
  const auto q_as = cpu::fnuz_sibling(p.q_format), k_as = cpu::fnuz_sibling(p.k_format);
  const ratio_stats r = ratios(s);
  if (r.count >= 16) {
    const double power = std::log2(std::fabs(r.median));
    const double nearest = std::round(power);
    if (std::fabs(power - nearest) > 0x1p-6 || nearest == 0 || std::fabs(nearest) > 2) return {};
  }
  auto describe = [](std::string_view operands, fp8::format from, fp8::format to) {
    const bool halves = fp8::traits(to).bias > fp8::traits(from).bias;
    return fmt::format("an {}/{} mix-up on {} ({} bytes read as {}, values {})", name_of(from), name_of(to), operands,
                       name_of(from), name_of(to), halves ? "halve" : "double");
  };
  std::vector<candidate> out;
  if (q_as)
    out.push_back({"fnuz-mixup-q", describe("q", p.q_format, *q_as),
                   [to = *q_as](model_config& c) {
                     c.corrupt_inputs = [to](cpu::owned_problem& o) { cpu::read_as(o, to, std::nullopt); };
                   }});
  if (k_as)
    out.push_back({"fnuz-mixup-k", describe("k", p.k_format, *k_as),
                   [to = *k_as](model_config& c) {
                     c.corrupt_inputs = [to](cpu::owned_problem& o) { cpu::read_as(o, std::nullopt, to); };
                   }});
  if (q_as && k_as)
    out.push_back({"fnuz-mixup-qk", describe("q and k", p.q_format, *q_as),
                   [q = *q_as, k = *k_as](model_config& c) {
                     c.corrupt_inputs = [q, k](cpu::owned_problem& o) { cpu::read_as(o, q, k); };
                   }});
  return out;
}

// BUGCLASSES 2, 3: vLLM's e4m3fn -> e4m3fnuz normalisation missing one of its two fixes; only
// where the codes it would fix occur (elsewhere it changes nothing).
std::vector<candidate> fnuz_normalisations(const situation& s) {
  const exact::problem& p = full(s);
  auto holds = [&](std::initializer_list<std::uint8_t> codes) {
    return (p.q_format == fp8::format::e4m3fn && has_code(p.q, codes)) ||
           (p.k_format == fp8::format::e4m3fn && has_code(key_codes(s), codes));
  };
  std::vector<candidate> out;
  if (holds({0x80}))
    out.push_back({"fnuz-normalize-keeps-0x80",
                   "an e4m3fn -> e4m3fnuz normalisation that forgets 0x80: -0 read as NaN in e4m3fnuz",
                   [](model_config& c) {
                     c.corrupt_inputs = [](cpu::owned_problem& o) { cpu::normalize_to_fnuz(o, false, true); };
                   }});
  if (holds({0x7F, 0xFF}))
    out.push_back({"fnuz-normalize-keeps-nan-bytes",
                   "an e4m3fn -> e4m3fnuz normalisation that keeps the NaN bytes 0x7F/0xFF: NaN read as +-240",
                   [](model_config& c) {
                     c.corrupt_inputs = [](cpu::owned_problem& o) { cpu::normalize_to_fnuz(o, true, false); };
                   }});
  return out;
}

// BUGCLASSES 22, 23: FlyDSL's e4m3fn -> e4m3fnuz recast for gfx942 (fp8::recast_id::flydsl, its
// NaN bytes, BUGCLASSES 3, taken out) with its 8-code packs recombined by a sign-extending widen,
// or its -0 scrub writing 0x81; each only where the codes it changes occur: a pack whose element 3
// is negative (not -0), a -0.
bool has_negative_low_half_top(std::span<const std::uint8_t> codes, std::int64_t head_dim) {
  const auto d = static_cast<std::size_t>(head_dim);
  for (std::size_t row = 0; row + d <= codes.size(); row += d)
    for (std::size_t at = row + 3; at < row + d; at += 8)
      if (codes[at] > 0x80) return true;
  return false;
}

std::vector<candidate> gfx942_recasts(const situation& s) {
  const exact::problem& p = full(s);
  const bool q_fn = p.q_format == fp8::format::e4m3fn, k_fn = p.k_format == fp8::format::e4m3fn;
  std::vector<candidate> out;
  if ((q_fn && has_negative_low_half_top(p.q, p.head_dim)) || (k_fn && has_negative_low_half_top(key_codes(s), p.head_dim)))
    out.push_back({"fnuz-pack-sign-extended",
                   "an e4m3fn -> e4m3fnuz recast that widens each 8-code pack's low half with sign extension: a "
                   "negative element 3 turns elements 4..7 into 0xFF (-240) (ROCm/aiter#5452, fixed by #5476)",
                   [](model_config& c) {
                     c.corrupt_inputs = [](cpu::owned_problem& o) {
                       cpu::recast_for_gfx942(o, cpu::keeping_nan(fp8::rules(fp8::recast_id::flydsl)),
                                              cpu::pack_recombine::sign_extended);
                     };
                   }});
  if ((q_fn && has_code(p.q, {0x80})) || (k_fn && has_code(key_codes(s), {0x80}))) {
    candidate scrub("fnuz-scrub-0x81",
                    "an e4m3fn -> e4m3fnuz recast that scrubs -0 (0x80) to 0x81, the smallest negative subnormal of "
                    "e4m3fnuz, not 0",
                    [](model_config& c) {
                      c.corrupt_inputs = [](cpu::owned_problem& o) {
                        cpu::recast_for_gfx942(
                            o, cpu::scrubbing_negative_zero_to(cpu::keeping_nan(fp8::rules(fp8::recast_id::flydsl)), 0x81));
                      };
                    });
    // One subnormal step per -0 fits inside the bound of many an honest difference: named only bit for bit.
    scrub.within_bound = false;
    out.push_back(std::move(scrub));
  }
  return out;
}

// BUGCLASSES 4: with 448 for e4m3fnuz's 240 every key's largest elements overflow to NaN, so the
// output shows NaN where the exact logits are numbers.
std::vector<candidate> wrong_saturation_bound(const situation& s) {
  const bool nan_shown = std::any_of(s.judged.findings.begin(), s.judged.findings.end(),
                                     [](const compare::finding& f) { return f.kind == finding_class::nan; });
  if (!nan_shown) return {};
  return {{"fnuz-bound-448", "k requantized to e4m3fnuz with the OCP bound 448 (values above 240 become NaN)",
           [](model_config& c) {
             c.corrupt_inputs = [](cpu::owned_problem& o) { cpu::requantize_k_to_fnuz(o, 448.0); };
           }}};
}

std::vector<candidate> transposed_weights(const situation& s) {
  if (rows_together(s) < 2 || full(s).heads < 2) return {};
  return {{"weights-transposed",
           s.e.paged ? "each request's weights [next_n, H] read as [H, next_n]" : "weights [M, H] read as [H, M]",
           [](model_config& c) { c.corrupt_inputs = cpu::transpose_weights; }}};
}

std::vector<candidate> scale_before_relu(const situation& s) {
  const std::span<const float> k_scale = key_scales(s);
  const bool after_relu = s.e.contract.scale == bounds::scale_placement::after_head_sum ||
                          s.e.contract.scale == bounds::scale_placement::into_weights;
  if (!after_relu || std::none_of(k_scale.begin(), k_scale.end(), [](float x) { return x < 0; })) return {};
  return {{"scale-before-relu", "k_scale applied before relu (relu(s x) is not s relu(x) where k_scale < 0)",
           [](model_config& c) { c.scale = bounds::scale_placement::before_relu; }}};
}

// ---- arithmetic --------------------------------------------------------------------------------

std::vector<candidate> relu_by_fmax(const situation& s) {
  const auto& centre = s.s.judged_centre().logits;
  if (s.e.contract.relu != exact::relu_rule::keeps_nan ||
      std::none_of(centre.begin(), centre.end(), [](float x) { return std::isnan(x); }))
    return {};
  return {{"relu-fmax", "relu by fmax (a NaN dot becomes 0, as fmaxf and tl.maximum do)",
           [](model_config& c) { c.relu = exact::relu_rule::fmax; }}};
}

std::vector<candidate> dropped_terms(const situation& s) {
  const exact::problem& p = full(s);
  std::vector<candidate> out;
  if (p.heads > 1) {
    out.push_back({"dropped-head", fmt::format("the last head's term (h = {}) missing from the head sum", p.heads - 1),
                   [h = p.heads - 1](model_config& c) { c.dropped_head = h; }});
    out.push_back({"dropped-head", "the first head's term (h = 0) missing from the head sum",
                   [](model_config& c) { c.dropped_head = 0; }});
  }
  if (p.head_dim > 1)
    out.push_back({"dot-one-short",
                   fmt::format("each dot stopping one element short of head_dim (d = {} left out)", p.head_dim - 1),
                   [](model_config& c) { c.dot_length = -1; }});
  return out;
}

// A float32 input or the output held in bfloat16 somewhere on the way (a bf16 tensor, a cast): k_scale
// rounded (errors striped by key), the weights rounded (by row and head), the logits rounded as
// stored under a float32 contract. Each only where the rounding changes something.
std::vector<candidate> stored_precision(const situation& s) {
  const exact::problem& p = full(s);
  auto rounds = [](std::span<const float> values) {
    return std::any_of(values.begin(), values.end(),
                       [](float x) { return std::isfinite(x) && fp8::round_to_bfloat16(x) != x; });
  };
  std::vector<candidate> out;
  if (!s.e.paged && rounds(key_scales(s)))
    out.push_back({"k-scale-bf16", "k_scale rounded to bfloat16 before use (errors striped by key)",
                   [](model_config& c) { c.corrupt_inputs = cpu::round_k_scale_to_bfloat16; }});
  if (!s.e.paged && rounds(p.weights))
    out.push_back({"weights-bf16", "the weights rounded to bfloat16 before use",
                   [](model_config& c) { c.corrupt_inputs = cpu::round_weights_to_bfloat16; }});
  if (s.e.contract.logits == bounds::logits_precision::fp32)
    out.push_back({"output-bf16", "the logits rounded to bfloat16 as they are stored",
                   [](model_config& c) { c.logits = bounds::logits_precision::bf16; }});
  return out;
}

// One constant c shared by nearly every in-window ratio, not a power of two's business alone: a
// weight or k_scale multiplied by it. Within the bound the two cannot be told apart (the roundings
// differ by less than the bound), bit for bit they can.
std::vector<candidate> constant_factor(const situation& s) {
  const ratio_stats r = ratios(s);
  if (r.count < 4 || r.share_at_median < 0.9 || !std::isfinite(r.median) || std::fabs(r.median - 1) <= 0x1p-16) return {};
  const std::string text = short_decimal(r.median);
  const float c = std::stof(text);
  candidate weights("weights-factor", fmt::format("the weights multiplied by {}", text),
                    [c](model_config& m) { m.weight_factor = c; });
  weights.what_within_bound = fmt::format("every logit multiplied by {} (a factor on the weights or on k_scale)", text);
  candidate scales("k-scale-factor", fmt::format("k_scale multiplied by {}", text),
                   [c](model_config& m) { m.scale_factor = c; });
  scales.within_bound = false;
  return {std::move(weights), std::move(scales)};
}

// The kernel's dots computed another way than declared: each accumulator's row gives the cause id
// and the sentence (reference/bounds/accumulators.hpp). bf16 is suspected under any other
// declaration (under a modelled one, as the model's dot rounded to bfloat16); the float32 dot of
// a kernel declared exact is a declaration the float32 model already runs; every coarser
// accumulator, fp22 and each instruction model the problem's formats and head_dim allow, only
// where float32 or better was declared.
std::vector<candidate> declared_arithmetic(const situation& s) {
  using bounds::dot_accumulator;
  const exact::problem& p = full(s);
  const dot_accumulator dot = s.e.contract.dot;
  auto suspect = [](const bounds::dot_accumulator_traits& row, std::function<void(model_config&)> plant) {
    return candidate(std::string(row.cause), std::string(row.diagnosis), std::move(plant));
  };
  std::vector<candidate> out;
  if (dot != dot_accumulator::bf16)
    out.push_back(suspect(bounds::traits(dot_accumulator::bf16), [](model_config& c) {
      if (bounds::is_modelled(c.dot)) c.dot_to_bf16 = true;
      else c.dot = dot_accumulator::bf16;
    }));
  const bool fp32_or_better = dot == dot_accumulator::fp32 || dot == dot_accumulator::exact;
  if (dot == dot_accumulator::exact) {
    candidate fp32 = suspect(bounds::traits(dot_accumulator::fp32), [](model_config&) {});
    fp32.declare = [](kernels::contract& c) {
      c.dot = dot_accumulator::fp32;
      c.heads = bounds::head_accumulator::fp32;
    };
    out.push_back(std::move(fp32));
  }
  if (fp32_or_better)
    out.push_back(suspect(bounds::traits(dot_accumulator::fp22_truncated),
                          [](model_config& c) { c.dot = dot_accumulator::fp22_truncated; }));
  for (const auto& row : bounds::dot_accumulators()) {
    if (!row.model || dot == row.id || !fp32_or_better ||
        mma::why_unusable(*row.model, p.q_format, p.k_format, p.head_dim, 0))
      continue;
    out.push_back(suspect(row, [model = row.id](model_config& c) {
      c.dot = model;
      c.promote_every = 0;
    }));
  }
  return out;
}

std::vector<candidate> launch_dependent_order(const situation& s) {
  if (!s.e.repeat) return {};
  return {{"race", "a head sum whose order changes between launches (an unsynchronised reduction)",
           [](model_config& c) { c.head_order_varies = true; }}};
}

}  // namespace

const std::vector<hypothesis>& hypotheses() {
  static const std::vector<hypothesis> table{
      {"outside fill", kEverything, outside_fill},
      {"empty rows", kUnwritten, skipped_empty_rows},
      {"unstored tail", kUnwritten, unstored_tail},
      {"wrapped offsets", kEverything, wrapped_offsets},
      {"windows", kMask, windows},
      {"paged cache reading", kValues, paged_reading_bugs},
      {"saturation bound", kValues, wrong_saturation_bound},
      {"format mix-ups", kValues, format_mixups},
      {"fnuz normalisations", kValues, fnuz_normalisations},
      {"gfx942 recasts", kValues, gfx942_recasts},
      {"transposed weights", kValues, transposed_weights},
      {"scale before relu", kValues, scale_before_relu},
      {"relu", kValues, relu_by_fmax},
      {"dropped terms", kValues, dropped_terms},
      {"constant factor", kValues, constant_factor},
      {"stored precision", kValues, stored_precision},
      {"declared arithmetic", kValues, declared_arithmetic},
      {"launch-dependent order", {finding_class::nondeterministic}, launch_dependent_order},
  };
  return table;
}

}  // namespace mqa::diagnose
