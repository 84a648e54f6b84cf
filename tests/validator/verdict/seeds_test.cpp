// No false alarms by construction: the correct variants show zero findings over 100 seeds of
// every layout (values, windows and specials all change with the seed).
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include "kernels/registry.hpp"
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
};

std::string suite_text(const char* layout, int seeds) {
  std::string text = R"([suite]
name = "seeds"
variants = ["exact", "fp32-naive", "fp32-blocked", "fp22-truncated", "bf16-dot", "fp32-fmax"]
[defaults]
heads = 4
head_dim = 32
m = 8
n = 40
)";
  for (int seed = 0; seed < seeds; ++seed) {
    const char* values[] = {"normal", "uniform", "outliers", "near-ties"};
    text += fmt::format("[[case]]\nname = \"s{}\"\nseed = {}\ndistribution = \"{}\"\n{}\n", seed, seed, values[seed % 4],
                        layout);
    if (seed % 5 == 0) text += "special = [\"nan\", \"negative-underflow\", \"subnormal\", \"largest\"]\n";
    else if (seed % 7 == 0) text += "special = [\"negative-k-scale\", \"zero-k-scale\"]\n";
    if (seed % 3 == 0) text += "q_format = \"e4m3fnuz\"\nk_format = \"e4m3fnuz\"\n";
  }
  return text;
}

}  // namespace

TEST_CASE("correct variants show no finding over 100 seeds of every layout", "[validator][seeds]") {
  const char* layout = GENERATE(from_range(std::begin(kLayouts), std::end(kLayouts)));
  const cases::suite s = cases::parse_suite(suite_text(layout, 100), "seeds.toml");
  verdict::run_options o;
  o.threads = 1;
  const verdict::suite_report r = verdict::run_suite(s, o);
  CAPTURE(layout);
  REQUIRE(r.results.size() == 600);
  for (const auto& c : r.results) {
    std::string findings;
    for (const auto& f : c.judgement.findings) findings += fmt::format("{} x{}; ", compare::to_string(f.kind), f.count);
    INFO(c.case_name << " x " << c.variant << ": " << findings);
    CHECK(c.judgement.pass());
  }
}
