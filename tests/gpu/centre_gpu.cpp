// The modelled centre on the GPU (reference/exact/gpu/centre_kernel.hip) against the CPU's model
// (reference/mma through exact::compute's dot_model, itself held to a rational oracle and, for
// sm90-wgmma, to the H200's wgmma): every element, every bit, logits and magnitudes alike.
// gfx942-mfma's model runs here on an NVIDIA GPU: this checks our device code, not an AMD GPU.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>

#include "problems.hpp"
#include "reference/exact/gpu/exact_logits.hpp"
#include "reference/mma/instruction.hpp"

namespace mqa::gpu_test {
namespace {

struct centre_case {
  problem_spec spec;
  const mma::instruction* model;
  std::int64_t promote_every;
  bool every_code = false;
};

// The form of the steps the GPU takes for each instruction (centre_kernel.hip).
const char* expected_form(const mma::instruction& model) {
  return &model == &mma::sm90_wgmma() ? "the instruction model (truncating steps in float32)"
                                      : "the instruction model (integer steps)";
}

std::size_t differing_logits(const exact::result& a, const exact::result& b) {
  std::size_t differing = 0;
  for (std::size_t e = 0; e < a.logits.size(); ++e)
    differing += std::bit_cast<std::uint32_t>(a.logits[e]) != std::bit_cast<std::uint32_t>(b.logits[e]) &&
                 !(std::isnan(a.logits[e]) && std::isnan(b.logits[e]));
  return differing;
}

}  // namespace

TEST_CASE("the GPU's modelled centre equals the CPU model's bit for bit", "[gpu]") {
  using fp8::format;
  const centre_case c = GENERATE(values<centre_case>({
      {{"sm90 causal e4m3fn", 64, 1000, 64, 128, 0, format::e4m3fn, format::e4m3fn, layout::causal, 101},
       &mma::sm90_wgmma(), 0},
      {{"sm90 promoted every 64", 40, 700, 16, 128, 0, format::e4m3fn, format::e4m3fn, layout::ragged, 102},
       &mma::sm90_wgmma(), 64},
      {{"sm90 e5m2 keys, D=64, 100 heads", 33, 1001, 100, 64, 0, format::e4m3fn, format::e5m2, layout::causal, 103},
       &mma::sm90_wgmma(), 0},
      {{"sm90 e5m2 both, D=256", 16, 300, 8, 256, 0, format::e5m2, format::e5m2, layout::ragged, 104},
       &mma::sm90_wgmma(), 128},
      {{"gfx942 fnuz", 48, 777, 32, 128, 0, format::e4m3fnuz, format::e4m3fnuz, layout::causal, 105},
       &mma::gfx942_mfma(), 0},
      {{"gfx942 e5m2fnuz keys", 20, 400, 16, 64, 0, format::e4m3fnuz, format::e5m2fnuz, layout::ragged, 106},
       &mma::gfx942_mfma(), 32},
      // Every finite code: products across the formats' whole exponent ranges, subnormals and
      // zeros of both signs, so that most terms of a step lose bits to its alignment.
      {{"sm90 every e4m3fn code", 32, 900, 64, 128, 0, format::e4m3fn, format::e4m3fn, layout::causal, 107},
       &mma::sm90_wgmma(), 0, true},
      {{"sm90 every e5m2 code, promoted every 32", 24, 500, 8, 128, 0, format::e5m2, format::e5m2, layout::ragged, 108},
       &mma::sm90_wgmma(), 32, true},
      {{"sm90 every code, e4m3fn q and e5m2 k, D=256", 16, 400, 12, 256, 0, format::e4m3fn, format::e5m2,
        layout::causal, 109},
       &mma::sm90_wgmma(), 0, true},
      {{"gfx942 every e4m3fnuz code", 16, 300, 8, 64, 0, format::e4m3fnuz, format::e4m3fnuz, layout::ragged, 110},
       &mma::gfx942_mfma(), 0, true},
  }));
  problem_spec spec = c.spec;
  spec.every_code = c.every_code;
  const owned_problem p = make_problem(spec);
  gpu::exact_gpu_options o;
  o.reference.dot_model = c.model;
  o.reference.promote_every = c.promote_every;
  REQUIRE(gpu::modelled_centre_on_device(p.view(), o.reference));
  gpu::exact_gpu_report report;
  const exact::result gpu = gpu::exact_logits(p.view(), o, &report);
  const exact::result cpu = exact::compute(p.view(), o.reference);
  INFO(spec.name << " under " << c.model->name << ", dots by " << report.dot_engine);
  CHECK(report.on_device);
  CHECK(report.dot_engine == expected_form(*c.model));
  CHECK(report.cross_checked > 0);
  REQUIRE(gpu.rows == cpu.rows);
  CHECK(differing_logits(gpu, cpu) == 0);
  CHECK(gpu.magnitude == cpu.magnitude);  // the same sum in the same order: the same bits
  // The centre is the model's, not the exact reference: some logits differ from it.
  CHECK(differing_logits(gpu, exact::compute(p.view())) > 0);
}

TEST_CASE("the GPU's modelled centre hands non-finite inputs to the CPU's model", "[gpu]") {
  problem_spec spec{"specials", 24, 300, 16, 64, 0, fp8::format::e4m3fn, fp8::format::e4m3fn, layout::ragged, 121};
  spec.specials = true;
  const owned_problem p = make_problem(spec);
  for (const auto rule : {exact::relu_rule::keeps_nan, exact::relu_rule::fmax}) {
    gpu::exact_gpu_options o;
    o.reference.relu = rule;
    o.reference.dot_model = &mma::sm90_wgmma();
    gpu::exact_gpu_report report;
    const exact::result gpu = gpu::exact_logits(p.view(), o, &report);
    CHECK(report.special_rows == 1);
    CHECK(report.open_elements > 0);
    const exact::result cpu = exact::compute(p.view(), o.reference);
    CHECK(differing_logits(gpu, cpu) == 0);
    CHECK(gpu.magnitude == cpu.magnitude);
  }
}

TEST_CASE("a modelled centre the instruction does not take is refused by the CPU, in its words", "[gpu]") {
  const owned_problem p = make_problem({"fnuz under sm90", 4, 50, 2, 64, 0, fp8::format::e4m3fnuz,
                                        fp8::format::e4m3fnuz, layout::causal, 131});
  gpu::exact_gpu_options o;
  o.reference.dot_model = &mma::sm90_wgmma();
  CHECK_FALSE(gpu::modelled_centre_on_device(p.view(), o.reference));
  CHECK_THROWS_AS(gpu::exact_logits(p.view(), o), std::invalid_argument);
}

}  // namespace mqa::gpu_test
