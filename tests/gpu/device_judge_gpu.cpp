// The device comparator (validator/compare/device) against the host's: every output the quick and
// nightly suites judge is judged again on the device, from a device copy of the output and of its
// references, and where the device judges it the two judgements must agree in every finding,
// metric and note, bit for bit; where the host finds anything the device must not judge it. Where
// the suspicion note's witness is the centre, the device counts it: its counts must be the host's,
// for the output and for the reference handed back as the output (which the note must suspect).
// Each output is judged twice on the device: with each row's top-k found first in its band, and
// with every row's selected over the whole row; both must be the host's judgement.
#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "api/device_judge.hpp"
#include "api/reference_engine.hpp"
#include "tests/validator/compare/support.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/device/device_comparator.hpp"
#include "validator/compare/device/judge_args.hpp"
#include "validator/judge/references.hpp"
#include "validator/judge/suspicion.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::gpu_test {
namespace {

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

std::string histogram_difference(const char* name, const compare::ulp_histogram& a, const compare::ulp_histogram& b) {
  if (a.total != b.total || a.max != b.max) return fmt::format("{}: total {} / {}, max {} / {}", name, a.total, b.total, a.max, b.max);
  for (std::size_t x = 0; x < a.counts.size(); ++x)
    if (a.counts[x] != b.counts[x]) return fmt::format("{}: bucket {}: {} / {}", name, x, a.counts[x], b.counts[x]);
  return {};
}

// The first difference between the device's judgement and the host's ("" where none).
std::string difference(const compare::judgement& d, const compare::judgement& h) {
  if (d.findings.size() != h.findings.size())
    return fmt::format("{} findings / {}", d.findings.size(), h.findings.size());
  for (std::size_t x = 0; x < d.findings.size(); ++x) {
    const compare::finding &a = d.findings[x], &b = h.findings[x];
    if (a.kind != b.kind || a.count != b.count || a.first_row != b.first_row || a.first_col != b.first_col || a.detail != b.detail)
      return fmt::format("finding {}: {} x{} / {} x{}", x, compare::to_string(a.kind), a.count, compare::to_string(b.kind), b.count);
  }
  if (d.notes != h.notes) return "notes";
  const compare::metrics &a = d.stats, &b = h.stats;
  if (a.rows_judged != b.rows_judged || a.rows_with_empty_window != b.rows_with_empty_window || a.in_window != b.in_window ||
      a.compared != b.compared)
    return fmt::format("counts: rows {} / {}, in window {} / {}, compared {} / {}", a.rows_judged, b.rows_judged,
                       a.in_window, b.in_window, a.compared, b.compared);
  for (const auto& text : {histogram_difference("ulps", a.ulps, b.ulps),
                           histogram_difference("magnitude ulps", a.scaled.magnitude.units, b.scaled.magnitude.units),
                           histogram_difference("conditioned ulps", a.scaled.conditioned, b.scaled.conditioned)})
    if (!text.empty()) return text;
  if (!same_bits(a.max_error_over_bound_seen, b.max_error_over_bound_seen) || a.worst_row != b.worst_row ||
      a.worst_col != b.worst_col)
    return fmt::format("worst: {} at ({}, {}) / {} at ({}, {})", a.max_error_over_bound_seen, a.worst_row, a.worst_col,
                       b.max_error_over_bound_seen, b.worst_row, b.worst_col);
  if (a.mask_leaks != b.mask_leaks || a.mask_holes != b.mask_holes) return "mask counts";
  if (!same_bits(a.topk_recall_sum, b.topk_recall_sum) || a.topk_rows != b.topk_rows)
    return fmt::format("recall: {} over {} rows / {} over {}", a.topk_recall_sum, a.topk_rows, b.topk_recall_sum, b.topk_rows);
  const auto &x = a.decidedness, &y = b.decidedness;
  if (x.rows != y.rows || x.rows_fully_decided != y.rows_fully_decided || x.must_keep != y.must_keep ||
      x.must_drop != y.must_drop || x.ambiguous != y.ambiguous || !same_bits(x.median_ambiguous, y.median_ambiguous) ||
      x.rows_ranked != y.rows_ranked || x.rows_ranked_fully_decided != y.rows_ranked_fully_decided ||
      !same_bits(x.median_ambiguous_ranked, y.median_ambiguous_ranked) || x.worst_row != y.worst_row ||
      x.worst_ambiguous != y.worst_ambiguous || x.worst_k != y.worst_k)
    return fmt::format("decidedness: {} rows, {} ambiguous / {} rows, {} ambiguous", x.rows, x.ambiguous, y.rows, y.ambiguous);
  if (a.heat.m != b.heat.m || a.heat.n != b.heat.n || a.heat.rows != b.heat.rows || a.heat.cols != b.heat.cols)
    return "heat map geometry";
  for (std::size_t c = 0; c < a.heat.error_over_bound.size(); ++c)
    if (!same_bits(a.heat.error_over_bound[c], b.heat.error_over_bound[c]) || a.heat.unwritten[c] != b.heat.unwritten[c] ||
        a.heat.nonfinite[c] != b.heat.nonfinite[c] || a.heat.mask_mismatches[c] != b.heat.mask_mismatches[c])
      return fmt::format("heat map cell {}: {} / {}", c, a.heat.error_over_bound[c], b.heat.error_over_bound[c]);
  return {};
}

struct tally {
  int judged = 0, with_findings = 0;
  int modelled_on_gpu = 0, modelled_every_row = 0;  // modelled outputs whose centre the GPU computed
  int witnessed = 0, answers_suspected = 0;  // the witness counted on the device; the reference as output suspected
  std::int64_t topk_rows_from_band = 0;  // rows whose top-k the band settled (the judged outputs')
  std::map<std::string, int> on_host;  // why the device left an output to the host
};

// The output and its references put on the device, judged there, held to the host's judgement.
void hold_to_host(const compare::subject& s, const compare::judgement& host, tally& t) {
  // A modelled contract whose centre the GPU computes is judged on every row, a paged problem's too
  // (its requests' centres computed there one after another).
  const exact::options centred = judge::centre_options(s.contract);
  if (s.centre != nullptr &&
      (s.paged ? api::paged_on_device(*s.paged, centred) : api::on_device(*s.problem, centred))) {
    ++t.modelled_on_gpu;
    t.modelled_every_row += static_cast<std::int64_t>(s.centre->rows.size()) == s.problem->m;
  }
  if (const auto why = compare::device::unsupported(s)) {
    ++t.on_host[*why];
    return;
  }
  const kernels::output_view& o = s.output;
  if (o.m == 0) return;
  const std::size_t bytes = static_cast<std::size_t>((o.m - 1) * o.stride + o.n) * sizeof(float);
  void* output = compare::device::device_allocate(bytes, "test output");
  compare::device::copy_to_device(output, o.row(0), bytes, "test output");
  const std::vector<std::int64_t> witnessed = api::device_path::witnessed_on_device(s);
  const compare::device::references on_device(s, 0, witnessed);
  const compare::device::device_judgement d =
      compare::device::judge(s, on_device, {static_cast<const float*>(output), o.m, o.n, o.stride, 0});
  // The same output with every row's top-k selected over the whole row: the band is only a
  // shortcut to the same figures.
  const compare::device::device_judgement whole = compare::device::judge(
      s, on_device, {static_cast<const float*>(output), o.m, o.n, o.stride, 0}, compare::device::topk_search::whole_row);
  const std::string what = fmt::format("{} x {} under {}", s.problem->m, s.problem->n, kernels::describe(s.contract));
  if (!witnessed.empty()) {
    INFO(what << ": the suspicion note's counts");
    ++t.witnessed;
    const auto host_counts = judge::answer_copy_counts(s);
    REQUIRE(d.witness);
    REQUIRE(host_counts);
    CHECK(d.witness->differing == host_counts->differing);
    CHECK(d.witness->matched == host_counts->matched);
    // The reference handed back as the output, every row of it the judged ones hold.
    std::vector<float> answer(static_cast<std::size_t>(o.m * o.stride), NAN);
    for (std::size_t r = 0; r < s.reference->rows.size(); ++r)
      std::copy_n(s.reference->logits.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(o.n)), o.n,
                  answer.begin() + s.reference->rows[r] * o.stride);
    compare::subject copied = s;
    copied.output = {answer.data(), o.m, o.n, o.stride};
    compare::device::copy_to_device(output, answer.data(), bytes, "test answer");
    const compare::device::device_judgement a =
        compare::device::judge(copied, on_device, {static_cast<const float*>(output), o.m, o.n, o.stride, 0});
    const auto host_answer = judge::answer_copy_counts(copied);
    REQUIRE(a.witness);
    REQUIRE(host_answer);
    CHECK(a.witness->differing == host_answer->differing);
    CHECK(a.witness->matched == host_answer->matched);
    CHECK(a.witness->matched == a.witness->differing);
    t.answers_suspected += judge::suspected(*a.witness);
  }
  compare::device::device_free(output);
  CHECK(whole.topk_rows_from_band == 0);
  CHECK(whole.findings == d.findings);
  CHECK(whole.judged.has_value() == d.judged.has_value());
  if (d.judged) {
    ++t.judged;
    t.topk_rows_from_band += d.topk_rows_from_band;
    INFO(what);
    CHECK(difference(*d.judged, host) == "");
    REQUIRE(whole.judged);
    CHECK(difference(*whole.judged, host) == "");
    return;
  }
  if (d.findings > 0) {
    ++t.with_findings;
    INFO(what << ": the device saw " << d.findings << " elements a finding is made of");
    CHECK_FALSE(host.pass());
    return;
  }
  ++t.on_host[d.why];
}

tally cross_check(const char* suite_file) {
  const cases::suite suite = cases::load_suite(std::string(MQA_SOURCE_DIR) + "/" + suite_file);
  tally t;
  verdict::run_options o;
  o.engines = api::reference_engines();
  o.diagnose = false;
  o.judged = [&](const compare::subject& s, const compare::judgement& j) { hold_to_host(s, j, t); };
  verdict::run_suite(suite, o);
  std::string left;
  for (const auto& [why, count] : t.on_host) left += fmt::format("; {} left to the host: {}", count, why);
  WARN(suite_file << ": " << t.judged << " outputs judged on the device, " << t.with_findings
                  << " with findings judged on the host" << left << "; " << t.modelled_on_gpu
                  << " under a modelled contract with the centre on the GPU, " << t.modelled_every_row
                  << " of them judged on every row; the witness counted on the device for " << t.witnessed
                  << ", the reference as output suspected on " << t.answers_suspected << "; "
                  << t.topk_rows_from_band << " rows' top-k settled from the band");
  CHECK(t.modelled_every_row == t.modelled_on_gpu);
  CHECK(t.topk_rows_from_band > 0);
  return t;
}

}  // namespace

TEST_CASE("an overflow is excused on the device where the host excuses it, under each scale placement",
          "[gpu][device-judge]") {
  // The host excuses it under two placements and calls it `inf` under the other two
  // (tests/validator/compare/comparator_test.cpp): the device must judge the first two alike and
  // leave the others to the host.
  test::hand_case c(4, 40, 2, 16);
  test::make_scale_overflow(c);  // row 1 +inf where every logit is 0
  tally t;
  for (const auto placement : test::kScalePlacements) {
    const compare::subject s = c.subject(test::float32_with_scale(placement));
    INFO(bounds::to_string(placement));
    hold_to_host(s, compare::judge(s), t);
  }
  CHECK(t.judged == 2);
  CHECK(t.with_findings == 2);
}

TEST_CASE("a key whose exact value overflowed to -inf ranks on the device as on the host", "[gpu][device-judge]") {
  // tests/validator/compare/edges_test.cpp's case: the kernel's -FLT_MAX at key 3, an excused
  // overflow, keeps key 3 in its top-5 over key 0 (the -inf tie's first), and values the contract
  // allows rank it so. Judged with the band first and over the whole row, as the host judges it.
  test::hand_case c(1, 8, 1, 16);
  test::make_negative_overflow(c);
  c.out(0, 3) = -std::numeric_limits<float>::max();
  compare::subject s = c.subject();
  s.topk = 5;
  const compare::judgement host = compare::judge(s);
  REQUIRE(host.pass());
  tally t;
  hold_to_host(s, host, t);
  CHECK(t.judged == 1);
}

TEST_CASE("an output of no rows is judged on the device as on the host", "[gpu][device-judge]") {
  // Nothing is launched for it: the figures are those of nothing judged.
  test::hand_case c(0, 40, 2, 16);
  c.finish();
  const compare::subject s = c.subject();
  const compare::judgement host = compare::judge(s);
  const compare::device::references on_device(s, 0);
  const compare::device::device_judgement d = compare::device::judge(s, on_device, {nullptr, 0, c.n, c.n, 0});
  REQUIRE(d.judged);
  CHECK(d.findings == 0);
  CHECK(difference(*d.judged, host).empty());
  CHECK(d.judged->stats.rows_judged == 0);
  CHECK(d.judged->stats.ulps.total == 0);
}

TEST_CASE("rows of more than 2^31 - 512 keys are left to the host", "[gpu][device-judge]") {
  // The kernel steps through a row's keys, 512 at a time, in 32-bit integers; no array is read to
  // decide it.
  exact::problem p;
  p.m = 1, p.heads = 1, p.head_dim = 32;
  const exact::result reference;
  compare::subject s;
  s.problem = &p;
  s.reference = &reference;
  p.n = (std::int64_t{1} << 31) - 512;
  CHECK_FALSE(compare::device::unsupported(s).has_value());
  for (const std::int64_t n : {(std::int64_t{1} << 31) - 511, (std::int64_t{1} << 31) - 1, std::int64_t{1} << 31}) {
    p.n = n;
    const auto why = compare::device::unsupported(s);
    REQUIRE(why.has_value());
    CHECK(why->find("2^31 - 512") != std::string::npos);
  }
  p.n = 64;
  s.topk = 0;  // a hand-built subject: a case's k is at least 1
  const auto no_keys = compare::device::unsupported(s);
  REQUIRE(no_keys.has_value());
  CHECK(no_keys->find("top-k") != std::string::npos);
}

TEST_CASE("the device comparator judges every quick output as the host does", "[gpu][device-judge]") {
  const tally t = cross_check("cases/quick.toml");
  CHECK(t.judged > 0);
  CHECK(t.modelled_on_gpu > 0);
  CHECK(t.with_findings > 0);
  CHECK(t.witnessed > 0);
  CHECK(t.answers_suspected > 0);
}

TEST_CASE("the device comparator judges every nightly output as the host does", "[gpu][device-judge][nightly]") {
  const tally t = cross_check("cases/nightly.toml");
  CHECK(t.judged > 0);
  CHECK(t.modelled_on_gpu > 0);
}

}  // namespace mqa::gpu_test
