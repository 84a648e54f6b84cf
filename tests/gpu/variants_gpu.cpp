// The GPU variants under the comparator: correct ones pass on every shape and format they
// accept, each mutant produces the finding its planted bug must produce.
#include <catch2/catch.hpp>

#include "judge_variant.hpp"
#include "kernels/gpu/launchers.hpp"
#include "reference/exact/gpu/exact_logits.hpp"

namespace mqa::gpu_test {
namespace {

struct judged_case {
  owned_problem problem;
  exact::result reference;
};

judged_case prepare(const problem_spec& spec) {
  judged_case c{make_problem(spec), {}};
  c.reference = gpu::exact_logits(c.problem.view());
  return c;
}

}  // namespace

TEST_CASE("correct GPU variants pass", "[gpu]") {
  problem_spec specials{"specials, ragged", 30, 700, 16, 64, 0, fp8::format::e4m3fn, fp8::format::e4m3fn,
                        layout::ragged, 61};
  specials.specials = true;
  const std::vector<problem_spec> specs{
      {"causal e4m3fn", 96, 2000, 64, 128, 0, fp8::format::e4m3fn, fp8::format::e4m3fn, layout::causal, 62},
      {"ragged e4m3fnuz, padded stride", 64, 1000, 64, 128, 1024, fp8::format::e4m3fnuz, fp8::format::e4m3fnuz,
       layout::ragged, 63},
      {"odd shapes: 70 heads, D=37", 33, 515, 70, 37, 520, fp8::format::e4m3fn, fp8::format::e4m3fnuz,
       layout::ragged, 64},
      specials,
  };
  for (const auto& spec : specs) {
    const judged_case c = prepare(spec);
    for (const char* name : {"hip-naive", "hip-tiled"}) {
      const variant_verdict v = judge_variant(gpu_variant(name), c.problem, c.reference);
      INFO(name << " on " << spec.name << ": " << v.summary());
      CHECK(v.findings.empty());
    }
  }
}

TEST_CASE("the wgmma kernel matches the sm90-wgmma model end to end", "[gpu][wgmma]") {
  if (!gpu::kernel_built(gpu::kernel_id::wgmma_sm90)) {
    WARN("this build has no wgmma kernel (CUDA sm_90a only): not checked");
    return;
  }
  for (const auto& spec : {problem_spec{"causal e4m3fn, 64 heads", 96, 1500, 64, 128, 0, fp8::format::e4m3fn,
                                        fp8::format::e4m3fn, layout::causal, 81},
                           problem_spec{"ragged e5m2, 128 heads, D = 64, padded stride", 40, 700, 128, 64, 768,
                                        fp8::format::e5m2, fp8::format::e5m2, layout::ragged, 82}}) {
    const judged_case c = prepare(spec);
    const kernels::variant& wgmma = gpu_variant("cuda-wgmma");
    if (const auto why = wgmma.refuses(c.problem.view())) FAIL("cuda-wgmma refuses the problem: " << *why);
    const variant_verdict v = judge_variant(wgmma, c.problem, c.reference);
    INFO(spec.name << ": " << v.summary());
    CHECK(v.findings.empty());
    // On long e4m3 dots the same output fails a float32 contract: the truncating accumulator is real
    // (e5m2's 2-bit mantissas at D = 64 rarely lose a bit to it).
    if (spec.q_format == fp8::format::e4m3fn) {
      kernels::variant as_fp32 = wgmma;
      as_fp32.declared.dot = bounds::dot_accumulator::fp32;
      CHECK(judge_variant(as_fp32, c.problem, c.reference).has("error-bound"));
    }
    const variant_verdict tail = judge_variant(gpu_variant("cuda-wgmma-tail"), c.problem, c.reference);
    INFO("cuda-wgmma-tail: " << tail.summary());
    CHECK(tail.has("unwritten"));
  }
}

TEST_CASE("GPU mutants produce their findings", "[gpu]") {
  const judged_case causal =
      prepare({"causal, n % 256 != 0", 256, 4000, 64, 128, 0, fp8::format::e4m3fn, fp8::format::e4m3fn,
               layout::causal, 71});
  for (const char* name : {"hip-naive-end-inclusive", "hip-tiled-tail", "hip-tiled-race", "hip-tiled-atomic-order",
                           "hip-tiled-row-overrun"}) {
    const kernels::variant& mutant = gpu_variant(name);
    const variant_verdict v = judge_variant(mutant, causal.problem, causal.reference);
    INFO(name << ": " << v.summary());
    CHECK(v.has(mutant.must_produce.front()));
  }
  // 2048 rows of stride 2^18 + 256: from row 2046, key 512 on, the byte offset passes 2^31, where
  // an int32 offset turns negative.
  const judged_case padded = prepare({"stride 2^18 + 256: offsets pass 2^31 bytes", 2048, 1000, 8, 64,
                                      (1 << 18) + 256, fp8::format::e4m3fn, fp8::format::e4m3fn, layout::causal, 72});
  const variant_verdict offset = judge_variant(gpu_variant("hip-tiled-offset32"), padded.problem, padded.reference);
  INFO("hip-tiled-offset32: " << offset.summary());
  CHECK(offset.has("unwritten"));
  const variant_verdict correct = judge_variant(gpu_variant("hip-tiled"), padded.problem, padded.reference);
  INFO("hip-tiled: " << correct.summary());
  CHECK(correct.findings.empty());
}

}  // namespace mqa::gpu_test
