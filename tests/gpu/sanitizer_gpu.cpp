// Tiny launches for compute-sanitizer (ci/gpu.sh runs these hidden tests under it): the correct
// kernels and the exact reference must come out clean under memcheck and racecheck, and the
// race mutant must not pass racecheck. Nothing is judged here; the sanitizer's report is the
// evidence.
#include <catch2/catch.hpp>

#include "judge_variant.hpp"
#include "reference/exact/gpu/exact_logits.hpp"

namespace mqa::gpu_test {
namespace {

// 4 rows, 600 keys (a partial last tile), 64 heads, head_dim 32.
owned_problem tiny() {
  return make_problem({"tiny", 4, 600, 64, 32, 0, fp8::format::e4m3fn, fp8::format::e4m3fn, layout::ragged, 81});
}

void launch(const char* name, const owned_problem& p) {
  std::vector<float> out(static_cast<std::size_t>(p.m * p.stride));
  gpu_variant(name).run(p.view(), {out.data(), p.m, p.n, p.stride}, 0);
}

}  // namespace

TEST_CASE("correct kernels, one tiny launch each", "[.sanitizer-correct]") {
  const owned_problem p = tiny();
  for (const char* name : {"hip-naive", "hip-tiled", "hip-tiled-tail", "hip-naive-end-inclusive"}) launch(name, p);
  const exact::result r = gpu::exact_logits(p.view());
  CHECK(r.logits.size() == static_cast<std::size_t>(p.m * p.n));
  // head_dim 128: the integer engine's full-chunk staging and its next-tile prefetch.
  const owned_problem wide =
      make_problem({"tiny-128", 4, 600, 64, 128, 0, fp8::format::e4m3fn, fp8::format::e4m3fn, layout::ragged, 82});
  const exact::result w = gpu::exact_logits(wide.view());
  CHECK(w.logits.size() == static_cast<std::size_t>(wide.m * wide.n));
}

TEST_CASE("the race mutant, one tiny launch", "[.sanitizer-race]") { launch("hip-tiled-race", tiny()); }

}  // namespace mqa::gpu_test
