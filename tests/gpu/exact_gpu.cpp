// The GPU exact reference against the CPU one (itself tested against a rational oracle in
// tests/reference/exact): every element, every bit, on shapes that reach each of its paths.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "problems.hpp"
#include "reference/exact/gpu/exact_logits.hpp"
#include "reference/fp8/convert.hpp"

namespace mqa::gpu_test {
namespace {

void require_same(const exact::result& gpu, const exact::result& cpu, const owned_problem& p) {
  REQUIRE(gpu.rows == cpu.rows);
  REQUIRE(gpu.logits.size() == cpu.logits.size());
  const double slack = 4.0 * static_cast<double>(p.heads + p.head_dim + 3) * 0x1p-52;
  std::size_t logit_mismatches = 0, magnitude_mismatches = 0, first = gpu.logits.size();
  for (std::size_t e = 0; e < gpu.logits.size(); ++e) {
    const float g = gpu.logits[e], c = cpu.logits[e];
    const bool same = std::bit_cast<std::uint32_t>(g) == std::bit_cast<std::uint32_t>(c) ||
                      (std::isnan(g) && std::isnan(c));
    if (!same && logit_mismatches++ == 0) first = e;
    const double a = gpu.magnitude[e], b = cpu.magnitude[e];
    if (!(a == b || std::fabs(a - b) <= slack * std::max(a, b))) ++magnitude_mismatches;
  }
  INFO(p.name << ": first logit mismatch at element " << first << " of " << gpu.logits.size());
  CHECK(logit_mismatches == 0);
  CHECK(magnitude_mismatches == 0);
}

// The dot engines, fastest first. Where one cannot run (the build, the device, the problem), the
// next one that can does, and the report names it: expected_engine says which that must be.
struct engine_choice {
  const char* name;
  bool integer_dots, warpgroup_dots;
};
constexpr engine_choice kEngines[] = {{"wgmma", true, true}, {"mma.sync", true, false}, {"float64", false, false}};

gpu::exact_gpu_options options_for(const engine_choice& c) {
  gpu::exact_gpu_options o;
  o.integer_dots = c.integer_dots;
  o.warpgroup_dots = c.warpgroup_dots;
  return o;
}

// The start of the engine's report name (exact_kernel.hip's limits: the integer engines need
// head_dim <= 512, the Hopper form <= 128).
std::string expected_engine(const engine_choice& c, std::int64_t head_dim) {
  if (!c.integer_dots || !gpu::integer_dots_available() || head_dim > 512) return "float64";
  if (c.warpgroup_dots && gpu::warpgroup_dots_available() && head_dim <= 128) return "int8 tensor cores (wgmma";
  return "int8 tensor cores (mma.sync";
}

}  // namespace

TEST_CASE("GPU exact reference equals the CPU reference bit for bit", "[gpu]") {
  const std::vector<problem_spec> specs{
      {"causal e4m3fn", 64, 1000, 64, 128, 0, fp8::format::e4m3fn, fp8::format::e4m3fn, layout::causal, 11},
      {"ragged e4m3fnuz, D=37", 48, 777, 7, 37, 0, fp8::format::e4m3fnuz, fp8::format::e4m3fnuz, layout::ragged, 12},
      {"mixed fn/fnuz, 130 heads", 20, 300, 130, 20, 0, fp8::format::e4m3fn, fp8::format::e4m3fnuz, layout::ragged, 13},
      {"e4m3b11fnuz", 16, 260, 16, 64, 0, fp8::format::e4m3b11fnuz, fp8::format::e4m3b11fnuz, layout::ragged, 14},
      // head_dim 90 (three k-steps of 32 once padded), two passes of heads, keys not a multiple of 64.
      {"causal, D=90, 100 heads", 33, 1001, 100, 90, 0, fp8::format::e4m3fn, fp8::format::e4m3fn, layout::causal, 15},
  };
  // Every dot engine: the integer tensor cores in both forms (every format here has values below
  // 2^21 units) and the float64 tile GEMM that HIP builds use.
  const engine_choice engine = GENERATE(from_range(std::begin(kEngines), std::end(kEngines)));
  for (const auto& spec : specs) {
    const owned_problem p = make_problem(spec);
    gpu::exact_gpu_report report;
    const exact::result gpu = gpu::exact_logits(p.view(), options_for(engine), &report);
    INFO(spec.name << ", asked for " << engine.name << ", dots by " << report.dot_engine);
    CHECK(report.on_device);
    // HIP builds and older NVIDIA GPUs have only the float64 engine, non-Hopper ones no wgmma.
    CHECK(report.dot_engine.starts_with(expected_engine(engine, spec.head_dim)));
    CHECK(report.cross_checked > 0);
    require_same(gpu, exact::compute(p.view()), p);
  }
}

TEST_CASE("the integer engine's slices cover every code of every format it takes", "[gpu]") {
  // Every finite q code against every finite k code: q's codes run 0..255 along heads and dims
  // (x % 256 of the flat index), key j holds (j + 7 d) % 256 at dim d, so a q code at dim d meets
  // every k code there and each dot mixes all magnitudes and both signs. A NaN code (which would
  // send its whole row or key to the CPU) is replaced by code 0. head_dim 256 takes the mma.sync
  // form; 128 the wgmma one where it runs.
  const engine_choice engine = GENERATE(from_range(std::begin(kEngines), std::begin(kEngines) + 2));
  const std::int64_t dim = GENERATE(256, 128);
  for (const auto format : {fp8::format::e4m3fn, fp8::format::e4m3fnuz, fp8::format::e4m3b11fnuz}) {
    owned_problem p = make_problem({"all codes", 4, 256, 2, dim, 0, format, format, layout::causal, 61});
    const auto d_count = static_cast<std::size_t>(dim);
    auto finite = [&](std::size_t code) {
      return static_cast<std::uint8_t>(std::isfinite(fp8::decode(format, static_cast<std::uint8_t>(code))) ? code : 0);
    };
    for (std::size_t x = 0; x < p.q.size(); ++x) p.q[x] = finite(x % 256);
    for (std::size_t j = 0; j < 256; ++j)
      for (std::size_t d = 0; d < d_count; ++d) p.k[j * d_count + d] = finite((j + 7 * d) % 256);
    std::fill(p.ks.begin(), p.ks.end(), 0);
    std::fill(p.ke.begin(), p.ke.end(), 256);
    gpu::exact_gpu_report report;
    const exact::result gpu = gpu::exact_logits(p.view(), options_for(engine), &report);
    INFO(fp8::traits(format).name << ", head_dim " << dim << ", dots by " << report.dot_engine);
    CHECK(report.dot_engine.starts_with(expected_engine(engine, dim)));
    require_same(gpu, exact::compute(p.view()), p);
  }
}

TEST_CASE("the integer engine leaves head_dim above 512 to the float64 one", "[gpu]") {
  // Its shift classes are joined in int32 pairs, exact up to head_dim 512 (exact_kernel.hip).
  const owned_problem p = make_problem({"D=640", 6, 200, 4, 640, 0, fp8::format::e4m3fn, fp8::format::e4m3fn,
                                        layout::causal, 71});
  gpu::exact_gpu_options o;
  o.integer_dots = true;
  gpu::exact_gpu_report report;
  const exact::result gpu = gpu::exact_logits(p.view(), o, &report);
  CHECK(report.dot_engine.starts_with("float64"));
  require_same(gpu, exact::compute(p.view()), p);
}

TEST_CASE("GPU exact reference hands non-finite inputs to the CPU", "[gpu]") {
  problem_spec spec{"specials", 24, 300, 16, 64, 0, fp8::format::e4m3fn, fp8::format::e4m3fn, layout::ragged, 21};
  spec.specials = true;
  const owned_problem p = make_problem(spec);
  for (const auto rule : {exact::relu_rule::keeps_nan, exact::relu_rule::fmax}) {
    gpu::exact_gpu_options o;
    o.reference.relu = rule;
    gpu::exact_gpu_report report;
    const exact::result gpu = gpu::exact_logits(p.view(), o, &report);
    CHECK(report.special_rows == 1);
    CHECK(report.open_elements > 0);
    exact::options cpu_options;
    cpu_options.relu = rule;
    require_same(gpu, exact::compute(p.view(), cpu_options), p);
  }
}

TEST_CASE("GPU exact reference leaves float32 midpoints to the CPU", "[gpu]") {
  // w = 1 + 2^-23, q k = 1.5, k_scale = 1: V = 1.5 + 2^-23 + 2^-24, exactly halfway between two
  // float32 values. No enclosure decides a tie; ties-to-even gives 1.5 + 2^-22.
  owned_problem p = make_problem({"midpoint", 2, 3, 1, 1, 0, fp8::format::e4m3fn, fp8::format::e4m3fn,
                                  layout::causal, 31});
  std::fill(p.q.begin(), p.q.end(), std::uint8_t{0x3C});  // 1.5 in e4m3fn
  std::fill(p.k.begin(), p.k.end(), std::uint8_t{0x38});  // 1.0
  std::fill(p.k_scale.begin(), p.k_scale.end(), 1.0f);
  std::fill(p.weights.begin(), p.weights.end(), 1.0f + 0x1p-23f);
  std::fill(p.ks.begin(), p.ks.end(), 0);
  std::fill(p.ke.begin(), p.ke.end(), 3);
  gpu::exact_gpu_report report;
  const exact::result gpu = gpu::exact_logits(p.view(), {}, &report);
  CHECK(report.open_elements == 6);
  for (const float y : gpu.logits) CHECK(y == 1.5f + 0x1p-22f);
  require_same(gpu, exact::compute(p.view()), p);
}

TEST_CASE("a head sum that cancels is left to the CPU, not certified from rounded partial sums", "[gpu]") {
  // Heads 0-30 and 32-62 carry weights a and -a (a in [2^10, 2^11)) on the same dot, 128 * 448^2:
  // exactly nothing. Heads 31 and 63 carry 1 + 2^-23 and 0.5 on the dot 2^-9 * 448 = 0.875, so
  // V = 1.3125 + 0.875 * 2^-23. Any summation that meets partial sums near 2^38 (the integer
  // engine's fused multiply-adds, 8 heads a thread) rounds them at 2^-14: its s misses V by far
  // more than a float32 ulp, and only a bound in the terms' magnitude P (not |s|) leaves every
  // element open. Dot2 (the float64 engine) is exact enough to decide them all.
  owned_problem p = make_problem({"cancellation", 2, 8, 64, 128, 0, fp8::format::e4m3fn, fp8::format::e4m3fn,
                                  layout::causal, 81});
  std::fill(p.k.begin(), p.k.end(), std::uint8_t{0x7E});  // 448
  std::fill(p.k_scale.begin(), p.k_scale.end(), 1.0f);
  std::fill(p.ks.begin(), p.ks.end(), 0);
  std::fill(p.ke.begin(), p.ke.end(), 8);
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t h = 0; h < 64; ++h) {
      const bool small = h % 32 == 31;
      for (std::int64_t d = 0; d < 128; ++d)
        p.q[static_cast<std::size_t>((i * 64 + h) * 128 + d)] = small ? (d == 0 ? 0x01 : 0x00) : 0x7E;
      const float a = 1024.0f + 8.0f * static_cast<float>((h % 32) * 13 % 127) + 0.125f * static_cast<float>(i + 1);
      float w = h < 32 ? a : -a;
      if (h == 31) w = 1.0f + 0x1p-23f;
      if (h == 63) w = 0.5f;
      p.weights[static_cast<std::size_t>(i * 64 + h)] = w;
    }
  const engine_choice engine = GENERATE(from_range(std::begin(kEngines), std::end(kEngines)));
  gpu::exact_gpu_report report;
  const exact::result gpu = gpu::exact_logits(p.view(), options_for(engine), &report);
  INFO("dots by " << report.dot_engine);
  CHECK(report.dot_engine.starts_with(expected_engine(engine, p.head_dim)));
  const exact::result cpu = exact::compute(p.view());
  for (const float y : cpu.logits) CHECK(y == 1.3125f + 0x1p-23f);
  if (report.dot_engine.starts_with("int8")) CHECK(report.open_elements == p.m * p.n);
  else CHECK(report.open_elements == 0);
  require_same(gpu, cpu, p);
}

TEST_CASE("GPU exact references asked for by two threads at once are each the CPU's", "[gpu]") {
  // Two problems of different sizes, so that a call that freed or grew the other's device memory
  // (the process keeps one set) would corrupt it; each asked for four times from its own thread.
  const owned_problem a = make_problem({"thread a", 96, 3000, 64, 128, 0, fp8::format::e4m3fn, fp8::format::e4m3fn,
                                        layout::causal, 51});
  const owned_problem b = make_problem({"thread b", 40, 700, 16, 64, 0, fp8::format::e4m3fn, fp8::format::e4m3fn,
                                        layout::ragged, 52});
  std::vector<exact::result> from_a(4), from_b(4);
  std::exception_ptr failed_a, failed_b;
  auto ask = [](const owned_problem& p, std::vector<exact::result>& out, std::exception_ptr& failed) {
    try {
      for (auto& r : out) r = gpu::exact_logits(p.view());
    } catch (...) {
      failed = std::current_exception();
    }
  };
  {
    std::jthread first(ask, std::cref(a), std::ref(from_a), std::ref(failed_a));
    std::jthread second(ask, std::cref(b), std::ref(from_b), std::ref(failed_b));
  }
  if (failed_a) std::rethrow_exception(failed_a);
  if (failed_b) std::rethrow_exception(failed_b);
  const exact::result cpu_a = exact::compute(a.view()), cpu_b = exact::compute(b.view());
  for (const auto& r : from_a) require_same(r, cpu_a, a);
  for (const auto& r : from_b) require_same(r, cpu_b, b);
}

TEST_CASE("GPU exact reference computes requested rows only", "[gpu]") {
  const owned_problem p = make_problem({"rows", 40, 500, 8, 32, 0, fp8::format::e4m3fn, fp8::format::e4m3fn,
                                        layout::ragged, 41});
  gpu::exact_gpu_options o;
  o.reference.rows = {0, 7, 8, 39};
  exact::options cpu;
  cpu.rows = o.reference.rows;
  require_same(gpu::exact_logits(p.view(), o), exact::compute(p.view(), cpu), p);
}

TEST_CASE("GPU exact reference sends e5m2 dots, too wide for float64, to the CPU", "[gpu]") {
  const owned_problem p = make_problem({"e5m2", 8, 100, 4, 64, 0, fp8::format::e5m2, fp8::format::e5m2,
                                        layout::ragged, 51});
  gpu::exact_gpu_report report;
  const exact::result gpu = gpu::exact_logits(p.view(), {}, &report);
  CHECK_FALSE(report.on_device);
  require_same(gpu, exact::compute(p.view()), p);
}

}  // namespace mqa::gpu_test
