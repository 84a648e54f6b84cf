// No false alarms by construction: the correct variants show zero findings over 100 seeds of
// every layout (values, windows and specials all change with the seed), the paged decode
// operation's included (contexts, block tables and cache bytes change with the seed).
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <string>
#include <string_view>

#include "kernels/registry/registry.hpp"
#include "validator/case/load.hpp"
#include "validator/verdict/verdict.hpp"

using namespace mqa;

namespace {

constexpr const char* kLayouts[] = {
    R"(layout = { kind = "causal" })",
    R"(layout = { kind = "packed", requests = 3 })",
    R"(layout = { kind = "context-parallel" })",
    R"(layout = { kind = "sliding", window = 9 })",
    R"(layout = { kind = "compressed", ratio = 4, start = 2 })",
    R"(layout = { kind = "random", empty_fraction = 0.25 })",
    R"(layout = { kind = "causal", out_of_range = true })",
    R"(layout = { kind = "paged", next_n = 2, block_kv = 8 })",
    R"(layout = { kind = "paged", next_n = 4, block_kv = 4, context_lens_2d = true, fill = "shared-prefix", shared_blocks = 2, unused_entries = "stale", page_bytes = 160 })",
};

// formats: "mixed" (a third of the seeds e4m3fnuz), "ocp" (e4m3fn and e5m2 alternating) or "fnuz"
// (e4m3fnuz and e5m2fnuz alternating): each modelled instruction takes one family.
std::string suite_text(const char* layout, int seeds, const char* variants, const std::string& formats) {
  std::string text = fmt::format("[suite]\nname = \"seeds\"\nvariants = [{}]\n", variants);
  text += "[defaults]\nheads = 4\nhead_dim = 32\nm = 8\nn = 40\n";
  for (int seed = 0; seed < seeds; ++seed) {
    const char* values[] = {"normal", "uniform", "outliers", "near-ties"};
    text += fmt::format("[[case]]\nname = \"s{}\"\nseed = {}\ndistribution = \"{}\"\n{}\n", seed, seed, values[seed % 4],
                        layout);
    if (seed % 5 == 0) text += "special = [\"nan\", \"negative-underflow\", \"subnormal\", \"largest\"]\n";
    else if (seed % 7 == 0) text += "special = [\"negative-k-scale\", \"zero-k-scale\"]\n";
    if (formats == "mixed" && seed % 3 == 0) text += "q_format = \"e4m3fnuz\"\nk_format = \"e4m3fnuz\"\n";
    if (formats == "ocp" && seed % 2 == 1) text += "q_format = \"e5m2\"\nk_format = \"e5m2\"\n";
    if (formats == "fnuz")
      text += seed % 2 ? "q_format = \"e5m2fnuz\"\nk_format = \"e5m2fnuz\"\n" : "q_format = \"e4m3fnuz\"\nk_format = \"e4m3fnuz\"\n";
  }
  return text;
}

void expect_clean(const verdict::suite_report& r, std::size_t results) {
  REQUIRE(r.results.size() == results);
  for (const auto& c : r.results) {
    std::string findings;
    for (const auto& f : c.judgement.findings) findings += fmt::format("{} x{}; ", compare::to_string(f.kind), f.count);
    INFO(c.case_name << " x " << c.variant << ": " << findings);
    CHECK(c.judgement.pass());
  }
}

}  // namespace

TEST_CASE("correct variants show no finding over 100 seeds of every layout", "[validator][seeds]") {
  const char* layout = GENERATE(from_range(std::begin(kLayouts), std::end(kLayouts)));
  const cases::suite s = cases::parse_suite(
      suite_text(layout, 100, R"("exact", "fp32-naive", "fp32-blocked", "fp22-truncated", "bf16-dot", "fp32-fmax")",
                 "mixed"),
      "seeds.toml");
  verdict::run_options o;
  o.threads = 1;
  CAPTURE(layout);
  expect_clean(verdict::run_suite(s, o), 600);
}

TEST_CASE("matrix-unit kernels show no finding under their models over 100 seeds of every layout",
          "[validator][seeds][mma]") {
  const char* layout = GENERATE(from_range(std::begin(kLayouts), std::end(kLayouts)));
  verdict::run_options o;
  o.threads = 1;
  CAPTURE(layout);
  const cases::suite hopper =
      cases::parse_suite(suite_text(layout, 100, R"("sm90-wgmma", "sm90-wgmma-promoted")", "ocp"), "seeds.toml");
  expect_clean(verdict::run_suite(hopper, o), 200);
  const cases::suite cdna3 =
      cases::parse_suite(suite_text(layout, 100, R"("gfx942-mfma", "gfx942-mfma-as-fp32")", "fnuz"), "seeds.toml");
  expect_clean(verdict::run_suite(cdna3, o), 200);
}

// The newer entry points' options: fp4 operands (e2m1fn with ue8m0 block scales; every third seed fp8 q with
// fp4 k; the paged fp4 cache on the paged layouts), bf16 logits and relative columns.
TEST_CASE("fp4, bf16-logit and relative-column variants show no finding over 100 seeds of every layout",
          "[validator][seeds][fp4][bf16][relative]") {
  const char* layout = GENERATE(from_range(std::begin(kLayouts), std::end(kLayouts)));
  // The paged fp4 cache runs the float32 models; bf16 logits and relative columns are prefill-only.
  const bool paged = std::string_view(layout).find("paged") != std::string_view::npos;
  std::string text = std::string("[suite]\nname = \"seeds\"\nvariants = [\"exact\", \"fp32-naive\", \"fp32-blocked\"") +
                     (paged ? "]\n" : ", \"exact-bf16\", \"bf16-logits\", \"fp32-relative\"]\n") +
                     "[defaults]\nheads = 4\nhead_dim = 64\nm = 8\nn = 40\nk_format = \"e2m1fn\"\nk_scale = \"ue8m0\"\n"
                     "profile = \"deepgemm\"\n";
  for (int seed = 0; seed < 100; ++seed) {
    const char* values[] = {"normal", "uniform", "outliers", "near-ties"};
    text += fmt::format("[[case]]\nname = \"s{}\"\nseed = {}\ndistribution = \"{}\"\n{}\n", seed, seed, values[seed % 4],
                        layout);
    text += seed % 3 == 0 ? "q_format = \"e4m3fn\"\nq_scale = \"fp32\"\nprofile = \"ml_dtypes\"\n"
                          : "q_format = \"e2m1fn\"\nq_scale = \"ue8m0\"\n";
    if (seed % 7 == 0 && !paged) text += "special = [\"negative-k-scale\", \"zero-k-scale\"]\n";  // no float32 scale in a paged fp4 cache
  }
  const cases::suite s = cases::parse_suite(text, "seeds.toml");
  verdict::run_options o;
  o.threads = 1;
  CAPTURE(layout);
  expect_clean(verdict::run_suite(s, o), paged ? 300 : 600);
}
