#include "kernels/gpu/registry.hpp"

#include "kernels/gpu/launchers.hpp"
#include "kernels/gpu/runner.hpp"
#include "reference/gpu/problem_view.hpp"

namespace mqa::kernels {
namespace {

// What every kernel here declares: float32 dots and head sum, k_scale after the head sum, relu
// keeps NaN, -inf outside the window, bitwise repeatable.
contract fp32_contract() {
  contract c;
  c.dot = dot_accumulator::fp32;
  c.heads = head_accumulator::fp32;
  c.scale = scale_placement::after_head_sum;
  c.relu = exact::relu_rule::keeps_nan;
  c.mask = masking::clean;
  c.deterministic = true;
  return c;
}

launch_report report_of(const gpu::launch_result& r) {
  launch_report report;
  report.kernel_seconds = r.kernel_seconds;
  report.guard_band_violations = r.guard_band_violations;
  report.first_violation_offset = r.first_violation_offset;
  return report;
}

variant declared_variant(std::string name, std::string description, std::vector<std::string> must_produce,
                         std::string bug_class) {
  variant v;
  v.name = std::move(name);
  v.description = std::move(description);
  v.declared = fp32_contract();
  v.must_produce = std::move(must_produce);
  v.bug_class = std::move(bug_class);
  return v;
}

variant gpu_variant(std::string name, std::string description, gpu::kernel_id kernel, gpu::planted_bug bug,
                    std::vector<std::string> must_produce = {}, std::string bug_class = {}) {
  variant v = declared_variant(std::move(name), std::move(description), std::move(must_produce), std::move(bug_class));
  v.run = [kernel, bug](const exact::problem& p, const output_view& out, int /*run_index*/) {
    return report_of(
        gpu::run_kernel(kernel, bug, gpu::view_of(p), gpu::host_output{out.data, out.m, out.n, out.stride}));
  };
  return v;
}

// A kernel of the paged decode operation: it implements run_paged only.
variant paged_variant(std::string name, std::string description, gpu::kernel_id kernel, gpu::planted_bug bug,
                      std::vector<std::string> must_produce = {}, std::string bug_class = {}) {
  variant v = declared_variant(std::move(name), std::move(description), std::move(must_produce), std::move(bug_class));
  v.run_paged = [kernel, bug](const paged::problem& p, const output_view& out, int /*run_index*/) {
    return report_of(
        gpu::run_paged_kernel(kernel, bug, gpu::view_of(p), gpu::host_output{out.data, out.m, out.n, out.stride}));
  };
  return v;
}

}  // namespace

std::vector<variant> gpu_variants() {
  using gpu::kernel_id;
  using gpu::planted_bug;
  std::vector<variant> v;
  v.push_back(gpu_variant("hip-naive",
                          "GPU, one output element per thread, float32 dot and head sum in index order",
                          kernel_id::naive, planted_bug::none));
  v.push_back(gpu_variant("hip-tiled",
                          "GPU, one query row x 256-key tiles, head_dim staged through shared memory, "
                          "8x8 register blocks, fixed-order head reduction",
                          kernel_id::tiled, planted_bug::none));
  v.push_back(paged_variant("hip-paged-naive",
                            "GPU paged decode, one output element per thread: its key's page through the block "
                            "table, float32 dot and head sum in index order",
                            kernel_id::paged_naive, planted_bug::none));
  v.push_back(paged_variant("hip-paged-tiled",
                            "GPU paged decode, hip-tiled's blocks with each 256-key tile gathered from its pages "
                            "through the block table",
                            kernel_id::paged_tiled, planted_bug::none));
  if (gpu::kernel_built(kernel_id::mfma_gfx942)) {
    variant mfma = gpu_variant("hip-mfma-gfx942",
                               "gfx942 fp8 matrix cores (mfma_f32_16x16x32_fp8_fp8) on e4m3fnuz inputs; "
                               "the matrix core's accumulation is declared fp32, unmeasured",
                               kernel_id::mfma_gfx942, planted_bug::none);
    mfma.declared.q_format = fp8::format::e4m3fnuz;
    mfma.declared.k_format = fp8::format::e4m3fnuz;
    v.push_back(std::move(mfma));
  }
  if (gpu::kernel_built(kernel_id::wgmma_sm90)) {
    // Judged around the sm90-wgmma model (reference/mma): the end-to-end check of the model.
    auto wgmma = [](std::string name, std::string description, planted_bug bug, std::vector<std::string> must = {},
                    std::string bug_class = {}) {
      variant w = gpu_variant(std::move(name), std::move(description), kernel_id::wgmma_sm90, bug, std::move(must),
                              std::move(bug_class));
      w.declared.dot = dot_accumulator::sm90_wgmma;
      w.refuses = [](const exact::problem& p) {
        gpu::logits_args a;
        a.m = p.m, a.n = p.n, a.heads = p.heads, a.head_dim = p.head_dim;
        a.q_format = gpu::to_code_format(p.q_format);
        a.k_format = gpu::to_code_format(p.k_format);
        return gpu::wgmma_unsupported(a);
      };
      return w;
    };
    v.push_back(wgmma("cuda-wgmma",
                      "Hopper fp8 tensor cores: inline-PTX wgmma m64n64k32 over 64-key tiles, D chained in one "
                      "accumulator, fixed-order head reduction (sm_90a; heads % 64 == 0, head_dim % 32 == 0)",
                      planted_bug::none));
    v.push_back(wgmma("cuda-wgmma-tail", "mutant of cuda-wgmma: a window's last partial 64-key tile is never stored",
                      planted_bug::tail_tile_dropped, {"unwritten"}, "BUGCLASSES 16"));
  }
  v.push_back(gpu_variant("hip-naive-end-inclusive",
                          "mutant of hip-naive: the window end read as inclusive (j <= ke)",
                          kernel_id::naive, planted_bug::window_end_inclusive, {"mask-shift"}, "BUGCLASSES 11"));
  v.push_back(gpu_variant("hip-tiled-offset32",
                          "mutant of hip-tiled: output byte offset in int32; offsets past 2^31 bytes go "
                          "negative and are dropped, as an AMD buffer store drops out-of-range writes",
                          kernel_id::tiled, planted_bug::offset32, {"unwritten"}, "BUGCLASSES 17"));
  v.push_back(gpu_variant("hip-tiled-tail",
                          "mutant of hip-tiled: N / 256 key tiles instead of ceil(N / 256); the partial "
                          "tail tile is never stored",
                          kernel_id::tiled, planted_bug::tail_tile_dropped, {"unwritten"}, "BUGCLASSES 16"));
  v.push_back(gpu_variant("hip-tiled-race",
                          "mutant of hip-tiled: no barrier between filling a shared-memory stage and "
                          "reading it; groups read operands other groups have not stored yet",
                          kernel_id::tiled, planted_bug::missing_barrier, {"nondeterministic"}, "BUGCLASSES 20"));
  v.push_back(gpu_variant("hip-tiled-atomic-order",
                          "mutant of hip-tiled: the 8 head-group partials added by shared-memory atomics "
                          "in arrival order, so the float32 rounding differs between launches",
                          kernel_id::tiled, planted_bug::atomic_head_order, {"nondeterministic"}, "BUGCLASSES 20"));
  v.push_back(gpu_variant("hip-tiled-row-overrun",
                          "mutant of hip-tiled: the -inf fill runs over rows 0..m inclusive and writes one "
                          "row past the output's end (the runner's guard band catches it)",
                          kernel_id::tiled, planted_bug::row_past_end, {"out-of-bounds"},
                          "out-of-bounds write (runner guard bands)"));
  v.push_back(paged_variant("hip-paged-tiled-offset32",
                            "mutant of hip-paged-tiled: a block's byte offset (block x page stride) in int32; blocks "
                            "past 2^31 bytes of cache read zeros, as an AMD buffer load returns 0 for an "
                            "out-of-range offset (ROCm/aiter#4774, vllm#52109)",
                            kernel_id::paged_tiled, planted_bug::block_offset32, {"error-bound"},
                            "paged decode: 32-bit block offset"));
  return v;
}

}  // namespace mqa::kernels
