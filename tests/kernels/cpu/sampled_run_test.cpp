// The model run on sampled rows and keys writes what the full run writes there, for every knob
// that decides where stores land (validator/diagnose re-runs planted bugs this way).
#include <catch2/catch.hpp>

#include <bit>

#include "kernels/cpu/model.hpp"
#include "kernels/cpu/planted.hpp"
#include "support/one_case.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/inputs/inputs.hpp"

using namespace mqa;
using kernels::cpu::model_config;

TEST_CASE("a sampled model run equals the full run on the sample", "[kernels][model]") {
  const cases::case_spec spec = test::parse_one_case({.suite = "t", .m = 40, .n = 70, .heads = 4, .head_dim = 16,
                                                      .keys = "layout = { kind = \"random\", empty_fraction = 0.2 }\nseed = 11"})
                                    .cases.front();
  const inputs::tensors t = inputs::generate(spec);
  const exact::problem p = inputs::problem_of(spec, t);
  const std::int64_t stride = 96;
  struct row {
    const char* name;
    void (*plant)(model_config&);
    bool whole;  // wrapped stores come from elements outside a sample: only the whole problem shows them
  };
  const auto r = GENERATE(values<row>({
      {"correct", [](model_config&) {}, false},
      {"tail tile", [](model_config& c) { c.tail_block = 32; }, false},
      {"skipped empty rows", [](model_config& c) { c.skip_empty_rows = true; }, false},
      {"previous row's window", [](model_config& c) { c.window_of = kernels::cpu::previous_row_window; }, false},
      {"wrapped offsets", [](model_config& c) { c.offset_limit_bytes = 4096; }, true},
  }));
  CAPTURE(r.name);
  model_config c;
  r.plant(c);
  const float poison = std::bit_cast<float>(compare::kPoisonBits);
  std::vector<float> full(static_cast<std::size_t>(p.m * stride), poison);
  kernels::cpu::run_model(c, p, {full.data(), p.m, p.n, stride}, 0);

  std::vector<std::int64_t> rows, keys;
  for (std::int64_t i = 0; i < p.m; i += r.whole ? 1 : 3) rows.push_back(i);
  for (std::int64_t j = 0; j < p.n; ++j)
    if (r.whole || j % 31 <= 2 || j >= 68) keys.push_back(j);
  std::vector<float> sampled(rows.size() * keys.size(), poison);
  const kernels::cpu::sampled_output only{rows, keys, sampled.data()};
  kernels::cpu::run_model(c, p, {nullptr, p.m, p.n, stride}, 0, &only);
  for (std::size_t a = 0; a < rows.size(); ++a)
    for (std::size_t b = 0; b < keys.size(); ++b) {
      CAPTURE(rows[a], keys[b]);
      CHECK(std::bit_cast<std::uint32_t>(sampled[a * keys.size() + b]) ==
            std::bit_cast<std::uint32_t>(full[static_cast<std::size_t>(rows[a] * stride + keys[b])]));
    }
}
