// The diagnosis of paged decode findings: each of the decode path's planted bugs named by
// its own cause, bit for bit, on the whole problem and on a sample of its rows and keys; the
// distinctions the quick suite does not reach (masking without next_n is an inclusive end when
// next_n = 1; a block table that maps every block to itself cannot show it is ignored; a prefill
// problem is offered no paged cause); and nothing said of an error no planted bug makes.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <bit>

#include "kernels/cpu/paged.hpp"
#include "kernels/cpu/planted.hpp"
#include "kernels/cpu/registry.hpp"
#include "reference/paged/exact.hpp"
#include "support.hpp"
#include "support/one_case.hpp"
#include "support/paged_case.hpp"
#include "support/paths.hpp"
#include "validator/diagnose/hypotheses.hpp"
#include "validator/diagnose/sample.hpp"

using namespace mqa;
using compare::finding_class;
using kernels::cpu::paged_reading;
using kernels::cpu::paged_window;

namespace {

// A paged case with its exact reference, outputs of the CPU model's paged twin, and the comparator
// plus diagnosis on them as the runner applies them (a float32 contract: no centre).
struct paged_bench : test::paged_case {
  kernels::contract contract = kernels::declared_arithmetic(bounds::dot_accumulator::fp32);
  exact::result reference;
  std::int64_t stride = 0;

  explicit paged_bench(cases::case_spec s) : test::paged_case(test::generate_paged(std::move(s))) {
    if (!spec.clean_logits) contract.mask = kernels::masking::dont_care;
    reference = paged::compute(problem);
    stride = runner::padded_stride(problem.max_context);
  }

  std::vector<float> model(const paged_reading& reading, const kernels::cpu::model_config& c = {}) const {
    std::vector<float> out(static_cast<std::size_t>(rows.m * stride), std::bit_cast<float>(compare::kPoisonBits));
    kernels::cpu::run_paged_model(c, reading, problem, {out.data(), rows.m, rows.n, stride}, 0);
    return out;
  }

  compare::subject evidence(std::vector<float>& out) const {
    compare::subject e;
    e.problem = &rows;
    e.paged = &problem;
    e.reference = &reference;
    e.output = {out.data(), rows.m, rows.n, stride};
    e.contract = contract;
    e.topk = spec.topk;
    return e;
  }

  compare::judgement judge(std::vector<float>& out, bool diagnose = true,
                           double model_work = diagnose::options{}.model_work) const {
    compare::judgement j = compare::judge(evidence(out));
    if (diagnose) diagnose::explain(evidence(out), j, {model_work});
    return j;
  }
};

paged_bench from_suite(const std::string& file, const std::string& name) {
  const cases::suite s = cases::load_suite(test::source_dir() / "cases" / "bugs" / file);
  for (const auto& c : s.cases)
    if (c.name == name) return paged_bench(c);
  FAIL("no case " << name << " in " << file);
  return paged_bench(s.cases.front());
}

paged_bench from_layout(std::int64_t m, std::int64_t n, const std::string& layout, const std::string& extra = "") {
  return paged_bench(test::parse_one_case({.suite = "p", .m = m, .n = n, .heads = 4, .head_dim = 32,
                                           .keys = fmt::format("seed = 7\n{}\nlayout = {}", extra, layout)})
                         .cases.front());
}

std::string cause_sentences(const compare::judgement& j) {
  std::string out;
  for (const auto& f : j.findings)
    out += fmt::format("{}={} ", compare::to_string(f.kind), f.diagnosis ? f.diagnosis->sentence : "none");
  return out;
}

// The causes the hypotheses offer for `out` on the whole problem.
std::vector<std::string> offered(const compare::subject& e, const compare::judgement& j) {
  const diagnose::sample s = diagnose::take_sample(e, j, diagnose::options{}.model_work);
  const kernels::cpu::model_config base;
  const diagnose::situation here{e, s, j, base};
  std::vector<std::string> out;
  for (const auto& h : diagnose::hypotheses())
    for (const auto& c : h.candidates(here)) out.push_back(c.cause);
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

const std::vector<std::string> kPagedCauses{"paged-block-offset32", "paged-interleaved-scales",
                                            "paged-window-without-next-n", "paged-logical-blocks",
                                            "paged-shared-context-length"};

}  // namespace

TEST_CASE("each planted bug of the decode path is named bit for bit, whole and sampled", "[diagnose][paged]") {
  struct row {
    const char* file;
    const char* case_name;
    const char* cause;
    void (*plant)(paged_reading&);
  };
  const auto r = GENERATE(values<row>({
      {"22-paged-block-offset32.toml", "past-2-16-bytes", "paged-block-offset32",
       [](paged_reading& x) { x.block_offset_overflows_at = std::int64_t{1} << 16; }},
      {"23-paged-interleaved-scales.toml", "decode", "paged-interleaved-scales",
       [](paged_reading& x) { x.scales_interleaved = true; }},
      {"23-paged-interleaved-scales.toml", "padded-pages", "paged-interleaved-scales",
       [](paged_reading& x) { x.scales_interleaved = true; }},
      {"24-paged-window-without-next-n.toml", "next-n-3", "paged-window-without-next-n",
       [](paged_reading& x) { x.window = paged_window::without_next_n; }},
      {"25-paged-logical-blocks.toml", "shuffled", "paged-logical-blocks", [](paged_reading& x) { x.logical_blocks = true; }},
      {"25-paged-logical-blocks.toml", "shared-prefix", "paged-logical-blocks",
       [](paged_reading& x) { x.logical_blocks = true; }},
      {"26-paged-shared-context-length.toml", "2d", "paged-shared-context-length",
       [](paged_reading& x) { x.window = paged_window::last_row; }},
      {"26-paged-shared-context-length.toml", "1d", "paged-shared-context-length",
       [](paged_reading& x) { x.window = paged_window::last_row; }},
  }));
  // The default budget takes these cases whole; 2^16 multiply-adds take 8 rows and a few dozen keys.
  const double work = GENERATE(diagnose::options{}.model_work, 0x1p16);
  CAPTURE(r.file, r.case_name, work);
  const paged_bench b = from_suite(r.file, r.case_name);
  paged_reading reading;
  r.plant(reading);
  std::vector<float> out = b.model(reading);
  const compare::judgement j = b.judge(out, true, work);
  INFO(cause_sentences(j));
  REQUIRE_FALSE(j.pass());
  int named = 0;
  for (const auto& f : j.findings) {
    if (f.kind == finding_class::topk_mismatch && !f.diagnosis) continue;  // top-k needs every key
    REQUIRE(f.diagnosis);
    CHECK(f.diagnosis->cause == r.cause);
    CHECK(f.diagnosis->bit_for_bit);
    ++named;
  }
  CHECK(named > 0);
  const bool whole = work == diagnose::options{}.model_work;
  for (const auto& f : j.findings)
    if (f.diagnosis)
      CHECK_THAT(f.diagnosis->sentence, Catch::Contains(whole ? "on all " : "sampled rows"));
}

TEST_CASE("a prefill bug's paged twin is named by the prefill bug, also on a sample", "[diagnose][paged]") {
  const paged_bench b = from_layout(
      12, 400, R"({ kind = "paged", next_n = 3, block_kv = 32, context_min = 40, context_max = 400, fill = "shuffled" })");
  struct row {
    const char* cause;
    void (*plant)(kernels::cpu::model_config&);
  };
  const auto r = GENERATE(values<row>({
      {"inclusive-end", [](kernels::cpu::model_config& c) { c.window_of = kernels::cpu::inclusive_end_window; }},
      {"previous-row-window", [](kernels::cpu::model_config& c) { c.window_of = kernels::cpu::previous_row_window; }},
      {"weights-transposed", [](kernels::cpu::model_config& c) { c.corrupt_inputs = kernels::cpu::transpose_weights; }},
      {"dropped-head", [](kernels::cpu::model_config& c) { c.dropped_head = 3; }},
  }));
  const double work = GENERATE(diagnose::options{}.model_work, 0x1p15);
  CAPTURE(r.cause, work);
  kernels::cpu::model_config c;
  r.plant(c);
  std::vector<float> out = b.model({}, c);
  const compare::judgement j = b.judge(out, true, work);
  INFO(cause_sentences(j));
  REQUIRE_FALSE(j.pass());
  for (const auto& f : j.findings) {
    if (f.kind == finding_class::topk_mismatch && !f.diagnosis) continue;
    REQUIRE(f.diagnosis);
    CHECK(f.diagnosis->cause == r.cause);
    CHECK(f.diagnosis->bit_for_bit);
  }
}

TEST_CASE("masking without next_n is an inclusive end when next_n = 1: the sentence names both", "[diagnose][paged]") {
  const paged_bench b = from_layout(6, 200, R"({ kind = "paged", block_kv = 16, context_min = 1, context_max = 199 })");
  paged_reading reading;
  reading.window = paged_window::without_next_n;
  std::vector<float> out = b.model(reading);
  const compare::judgement j = b.judge(out);
  INFO(cause_sentences(j));
  const compare::finding* f = test::finding_of(j, finding_class::mask_shift);
  REQUIRE(f);
  REQUIRE(f->diagnosis);
  CHECK(f->diagnosis->bit_for_bit);
  CHECK(f->diagnosis->cause == "inclusive-end");  // the table's order: the prefill bug first
  CHECK_THAT(f->diagnosis->sentence, Catch::Contains("window end read as inclusive") && Catch::Contains("or equally") &&
                                         Catch::Contains("without next_n = 1"));
}

TEST_CASE("paged causes are offered only where the problem can show them", "[diagnose][paged]") {
  SECTION("never for a prefill problem") {
    const test::bench prefill(16, 64, 4, 32, "layout = { kind = \"random\" }\nseed = 3");
    kernels::cpu::model_config c;
    c.window_of = kernels::cpu::inclusive_end_window;
    std::vector<float> out = prefill.model(c);
    const compare::judgement j = prefill.judge(out, nullptr, false);
    REQUIRE_FALSE(j.pass());
    const std::vector<std::string> causes = offered(prefill.evidence(out), j);
    CHECK(contains(causes, "inclusive-end"));
    for (const auto& cause : kPagedCauses) CHECK_FALSE(contains(causes, cause));
  }
  SECTION("the block table ignored needs a block the table maps elsewhere") {
    // One request, blocks in order: logical block i is physical block i, so ignoring the table
    // reads the same keys; a shuffled pool maps them elsewhere.
    const std::string layout = R"({ kind = "paged", block_kv = 16, context_min = 64, fill = "FILL" })";
    auto with_fill = [&](const char* fill) {
      std::string l = layout;
      l.replace(l.find("FILL"), 4, fill);
      return from_layout(1, 128, l);
    };
    for (const char* fill : {"sequential", "shuffled"}) {
      CAPTURE(fill);
      const paged_bench b = with_fill(fill);
      std::vector<float> out = b.model({});
      out[5] = out[5] * 2 + 1;  // a finding to diagnose
      const compare::judgement j = b.judge(out, false);
      REQUIRE_FALSE(j.pass());
      CHECK(contains(offered(b.evidence(out), j), "paged-logical-blocks") == (std::string(fill) == "shuffled"));
    }
  }
  SECTION("never a prefill window bug a paged window cannot show") {
    // Paged windows start at key 0 and end at most at the context: nothing to align down, nothing
    // negative to read as unsigned, no key before the start.
    const paged_bench b = from_layout(8, 300, R"({ kind = "paged", next_n = 2, block_kv = 32, context_min = 50 })");
    kernels::cpu::model_config c;
    c.window_of = kernels::cpu::inclusive_end_window;
    std::vector<float> out = b.model({}, c);
    const compare::judgement j = b.judge(out, false);
    REQUIRE_FALSE(j.pass());
    const std::vector<std::string> causes = offered(b.evidence(out), j);
    CHECK(contains(causes, "inclusive-end"));
    CHECK(contains(causes, "previous-row-window"));
    for (const char* cause : {"ks-aligned-down", "unsigned-window", "start-one-early"}) CHECK_FALSE(contains(causes, cause));
  }
  SECTION("one length per request needs rows of a request whose windows differ") {
    const paged_bench one_row = from_layout(4, 100, R"({ kind = "paged", block_kv = 16, context_min = 10 })");
    const paged_bench three_rows = from_layout(6, 100, R"({ kind = "paged", next_n = 3, block_kv = 16, context_min = 10 })");
    for (const paged_bench* b : {&one_row, &three_rows}) {
      std::vector<float> out = b->model({});
      out[3] = out[3] * 2 + 1;
      const compare::judgement j = b->judge(out, false);
      REQUIRE_FALSE(j.pass());
      CHECK(contains(offered(b->evidence(out), j), "paged-shared-context-length") == (b == &three_rows));
    }
  }
}

TEST_CASE("what no planted bug makes on a paged problem gets no diagnosis", "[diagnose][paged]") {
  const paged_bench b = from_layout(8, 300, R"({ kind = "paged", next_n = 2, block_kv = 32, context_min = 50 })");
  std::vector<float> out = b.model({});
  REQUIRE(b.judge(out).pass());  // the correct paged twin: nothing to diagnose
  auto in_window = [&](std::int64_t row, std::int64_t nth) {
    const exact::window w = exact::clamped_window(b.rows, row);
    REQUIRE(w.end - w.begin > nth);
    return static_cast<std::size_t>(row * b.stride + w.begin + nth);
  };
  SECTION("one element far off") {
    out[in_window(3, 20)] += 1000.0f;
  }
  SECTION("one request's row scaled by 1.5") {
    for (std::int64_t j = 0; j < b.rows.n; ++j) out[static_cast<std::size_t>(5 * b.stride + j)] *= 1.5f;
  }
  SECTION("one -inf inside a window") {
    out[in_window(6, 10)] = -INFINITY;
  }
  const compare::judgement j = b.judge(out);
  INFO(cause_sentences(j));
  REQUIRE_FALSE(j.pass());
  for (const auto& f : j.findings) CHECK_FALSE(f.diagnosis.has_value());
}
