// The CPU model computes every dot accumulator a kernel may declare (reference/bounds/
// accumulators.hpp) but `exact`, which no model claims: a new row without an instruction model or
// a software loop in kernels/cpu/model.cpp fails here.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "kernels/cpu/model.hpp"
#include "reference/bounds/accumulators.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/inputs/inputs.hpp"

using namespace mqa;

namespace {

// The first fp8 format the accumulator's instruction takes (any, for a software one).
fp8::format format_for(const bounds::dot_accumulator_traits& row) {
  for (const auto& t : fp8::kFormats)
    if (!row.model || !mma::why_unusable(*row.model, t.id, t.id, 32, 0)) return t.id;
  FAIL("no format the instruction takes");
  return fp8::format::e4m3fn;
}

}  // namespace

TEST_CASE("the CPU model runs every declared dot accumulator but exact", "[kernels][model][accumulators]") {
  for (const auto& row : bounds::dot_accumulators()) {
    CAPTURE(row.name);
    const std::string format(fp8::traits(format_for(row)).name);
    const cases::case_spec spec =
        cases::parse_suite(fmt::format("[suite]\nname = \"t\"\n[[case]]\nname = \"c\"\nm = 6\nn = 9\nheads = 2\n"
                                       "head_dim = 32\nq_format = \"{0}\"\nk_format = \"{0}\"\nseed = 3\n",
                                       format),
                           "t.toml")
            .cases.front();
    const inputs::tensors t = inputs::generate(spec);
    const exact::problem p = inputs::problem_of(spec, t);
    kernels::cpu::model_config c;
    c.dot = row.id;
    std::vector<float> out(static_cast<std::size_t>(p.m * p.n), std::bit_cast<float>(compare::kPoisonBits));
    const kernels::output_view view{out.data(), p.m, p.n, p.n};
    if (row.id == bounds::dot_accumulator::exact) {
      CHECK_THROWS_AS(kernels::cpu::run_model(c, p, view, 0), std::logic_error);
      continue;
    }
    kernels::cpu::run_model(c, p, view, 0);
    std::int64_t written = 0;
    for (std::int64_t i = 0; i < p.m; ++i) {
      const exact::window w = exact::clamped_window(p, i);
      for (std::int64_t j = w.begin; j < w.end; ++j, ++written)
        CHECK(std::isfinite(out[static_cast<std::size_t>(i * p.n + j)]));
    }
    CHECK(written > 0);
  }
}
