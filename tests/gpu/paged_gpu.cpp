// The paged decode kernels (kernels/gpu/paged.hip) under the validator, and the paged reference
// through the GPU exact engine: correct kernels pass on every shape the cache's
// layout allows, the 32-bit block offset mutant is caught on a cache past 2^31 bytes, and the
// reference gathered per request through the GPU engine equals the CPU one bit for bit.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>
#include <cmath>

#include "../support/paged_case.hpp"
#include "judge_variant.hpp"
#include "reference/exact/gpu/exact_logits.hpp"
#include "reference/paged/exact.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::gpu_test {
namespace {

// A paged case and its reference, computed on the CPU.
struct paged_case : test::paged_case {
  exact::result reference;
  explicit paged_case(test::paged_case generated)
      : test::paged_case(std::move(generated)), reference(paged::compute(problem)) {}
};

paged_case make(const std::string& keys) {
  return paged_case(test::generate_paged(
      cases::parse_suite("[suite]\nname = \"gpu\"\n[[case]]\nname = \"c\"\n" + keys, "gpu.toml").cases.front()));
}

std::string summary(const runner::outcome& r) {
  std::string s;
  for (const auto& f : r.judgement.findings)
    s += fmt::format("{} x{} first ({}, {}); ", compare::to_string(f.kind), f.count, f.first_row, f.first_col);
  return s.empty() ? "pass" : s;
}

runner::outcome run_judged(const paged_case& c, std::string_view name) {
  return runner::run(gpu_variant(name), c.rows, &c.problem, c.reference, nullptr, std::nullopt);
}

}  // namespace

TEST_CASE("correct GPU paged kernels pass on every cache layout", "[gpu][paged]") {
  const std::vector<std::string> shapes{
      // DeepGEMM's shape: H = 64, D = 128, block_kv 64, 1-D lengths, next_n = 2, a shuffled pool.
      "m = 16\nn = 3000\nheads = 64\nhead_dim = 128\nseed = 1\n"
      "layout = { kind = \"paged\", next_n = 2, block_kv = 64, context_lengths = [0, 64, 2999, 3000, 1, 700, 128, 2048] }",
      // 2-D lengths, block_kv 32, a shared prefix, -1 past each context, padded pages, NaN codes.
      "m = 12\nn = 1000\nheads = 32\nhead_dim = 64\nseed = 2\nspecial = [\"nan\", \"negative-k-scale\"]\n"
      "layout = { kind = \"paged\", next_n = 3, block_kv = 32, context_lens_2d = true, fill = \"shared-prefix\", "
      "shared_blocks = 4, unused_entries = \"minus-one\", page_bytes = 2320 }",
      // Odd shapes: head_dim 37 (unaligned key rows and scales), 70 heads, one key per page, fnuz.
      "m = 5\nn = 400\nheads = 70\nhead_dim = 37\nseed = 3\nq_format = \"e4m3fnuz\"\nk_format = \"e4m3fnuz\"\n"
      "profile = \"hip-satfinite\"\nlayout = { kind = \"paged\", block_kv = 1, unused_entries = \"stale\" }",
  };
  for (const auto& shape : shapes) {
    const paged_case c = make(shape);
    for (const char* name : {"hip-paged-naive", "hip-paged-tiled"}) {
      const runner::outcome r = run_judged(c, name);
      INFO(name << " on " << shape << ": " << summary(r));
      CHECK(r.judgement.pass());
    }
  }
}

TEST_CASE("the 32-bit block offset mutant reads zeros past 2^31 bytes of cache", "[gpu][paged]") {
  // Pages of 1 MiB (a payload of 64 x 132 bytes, padded): blocks 2048 and up start past 2^31
  // bytes. Request 0 reads blocks on both sides of the boundary, request 1 only below it.
  const paged_case c = make(
      "m = 4\nn = 256\nheads = 64\nhead_dim = 128\nseed = 4\n"
      "layout = { kind = \"paged\", next_n = 2, block_kv = 64, page_bytes = 1048576, num_blocks = 2100, "
      "context_lengths = [256, 256], block_table = [[2047, 2048, 3, 2099], [0, 1, 2, 2047]] }");
  REQUIRE(c.problem.kv_cache.size() > (std::size_t{1} << 31));
  const runner::outcome mutant = run_judged(c, "hip-paged-tiled-offset32");
  INFO("hip-paged-tiled-offset32: " << summary(mutant));
  CHECK(std::any_of(mutant.judgement.findings.begin(), mutant.judgement.findings.end(),
                    [](const auto& f) { return f.kind == compare::finding_class::error_bound && f.first_row < 2; }));
  for (const char* name : {"hip-paged-tiled", "hip-paged-naive"}) {
    const runner::outcome r = run_judged(c, name);
    INFO(name << ": " << summary(r));
    CHECK(r.judgement.pass());
  }
}

TEST_CASE("the paged reference through the GPU engine equals the CPU one bit for bit", "[gpu][paged]") {
  const paged_case c = make(
      "m = 12\nn = 2000\nheads = 64\nhead_dim = 128\nseed = 5\nspecial = [\"nan\"]\nspecial_in = \"k\"\n"
      "layout = { kind = \"paged\", next_n = 2, block_kv = 64, context_min = 0 }");
  const exact::result gpu = paged::compute(c.problem, {}, [](const exact::problem& p, const exact::options& o) {
    return gpu::exact_logits(p, gpu::exact_gpu_options{.reference = o});
  });
  REQUIRE(gpu.logits.size() == c.reference.logits.size());
  std::size_t mismatches = 0;
  for (std::size_t e = 0; e < gpu.logits.size(); ++e) {
    const float g = gpu.logits[e], r = c.reference.logits[e];
    mismatches += !(std::bit_cast<std::uint32_t>(g) == std::bit_cast<std::uint32_t>(r) || (std::isnan(g) && std::isnan(r)));
  }
  CHECK(mismatches == 0);
}

}  // namespace mqa::gpu_test
