#include "kernels/gpu/registry.hpp"

#include <stdexcept>
#include <string>
#include <vector>

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

// What each GPU kernel is: which operation it computes, and what it declares beyond
// fp32_contract(). The matrix-core kernels are built only where their toolchain is (kernel_built).
struct gpu_kernel {
  gpu::kernel_id id;
  bool paged = false;                  // the paged decode operation: run_paged only
  void (*declare)(variant&) = nullptr;  // its contract beyond fp32_contract(), and what it refuses
};

constexpr gpu_kernel kKernels[] = {
    {.id = gpu::kernel_id::naive},
    {.id = gpu::kernel_id::tiled},
    {.id = gpu::kernel_id::mfma_gfx942,
     .declare = [](variant& v) {
       v.declared.q_format = fp8::format::e4m3fnuz;
       v.declared.k_format = fp8::format::e4m3fnuz;
     }},
    // Judged around the sm90-wgmma model (reference/mma): the end-to-end check of the model.
    {.id = gpu::kernel_id::wgmma_sm90,
     .declare = [](variant& v) {
       v.declared.dot = dot_accumulator::sm90_wgmma;
       v.refuses = [](const exact::problem& p) {
         gpu::logits_args a;
         a.m = p.m, a.n = p.n, a.heads = p.heads, a.head_dim = p.head_dim;
         a.q_format = gpu::to_code_format(p.q_format);
         a.k_format = gpu::to_code_format(p.k_format);
         return gpu::wgmma_unsupported(a);
       };
     }},
    {.id = gpu::kernel_id::paged_naive, .paged = true},
    {.id = gpu::kernel_id::paged_tiled, .paged = true},
};

const gpu_kernel& kernel_of(gpu::kernel_id id) {
  for (const auto& k : kKernels)
    if (k.id == id) return k;
  throw std::logic_error("a GPU kernel without a row in kernels/hip/registry.cpp");
}

// One GPU variant: a kernel, the bug planted into it (none for a correct one), and for a mutant
// the finding classes that catch it and the class it plants.
struct gpu_variant_row {
  std::string_view name;
  gpu::kernel_id kernel;
  gpu::planted_bug bug = gpu::planted_bug::none;
  std::vector<std::string> must_produce = {};
  std::string_view bug_class = {};
  std::string_view description = {};
};

// In the order `mqacheck variants` lists them: correct kernels first, then the mutants.
const std::vector<gpu_variant_row>& rows() {
  using gpu::kernel_id;
  using gpu::planted_bug;
  static const std::vector<gpu_variant_row> table{
      {.name = "hip-naive", .kernel = kernel_id::naive,
       .description = "GPU, one output element per thread, float32 dot and head sum in index order"},
      {.name = "hip-tiled", .kernel = kernel_id::tiled,
       .description = "GPU, one query row x 256-key tiles, head_dim staged through shared memory, 8x8 register "
                      "blocks, fixed-order head reduction"},
      {.name = "hip-paged-naive", .kernel = kernel_id::paged_naive,
       .description = "GPU paged decode, one output element per thread: its key's page through the block table, "
                      "float32 dot and head sum in index order"},
      {.name = "hip-paged-tiled", .kernel = kernel_id::paged_tiled,
       .description = "GPU paged decode, hip-tiled's blocks with each 256-key tile gathered from its pages through "
                      "the block table"},
      {.name = "hip-mfma-gfx942", .kernel = kernel_id::mfma_gfx942,
       .description = "gfx942 fp8 matrix cores (mfma_f32_16x16x32_fp8_fp8) on e4m3fnuz inputs; the matrix core's "
                      "accumulation is declared fp32, unmeasured"},
      {.name = "cuda-wgmma", .kernel = kernel_id::wgmma_sm90,
       .description = "Hopper fp8 tensor cores: inline-PTX wgmma m64n64k32 over 64-key tiles, D chained in one "
                      "accumulator, fixed-order head reduction (sm_90a; heads % 64 == 0, head_dim % 32 == 0)"},
      {.name = "cuda-wgmma-tail", .kernel = kernel_id::wgmma_sm90, .bug = planted_bug::tail_tile_dropped,
       .must_produce = {"unwritten"}, .bug_class = "BUGCLASSES 16",
       .description = "mutant of cuda-wgmma: a window's last partial 64-key tile is never stored"},
      {.name = "hip-naive-end-inclusive", .kernel = kernel_id::naive, .bug = planted_bug::window_end_inclusive,
       .must_produce = {"mask-shift"}, .bug_class = "BUGCLASSES 11",
       .description = "mutant of hip-naive: the window end read as inclusive (j <= ke)"},
      {.name = "hip-tiled-offset32", .kernel = kernel_id::tiled, .bug = planted_bug::offset32,
       .must_produce = {"unwritten"}, .bug_class = "BUGCLASSES 17",
       .description = "mutant of hip-tiled: output byte offset in int32; offsets past 2^31 bytes go negative and are "
                      "dropped, as an AMD buffer store drops out-of-range writes"},
      {.name = "hip-tiled-tail", .kernel = kernel_id::tiled, .bug = planted_bug::tail_tile_dropped,
       .must_produce = {"unwritten"}, .bug_class = "BUGCLASSES 16",
       .description = "mutant of hip-tiled: N / 256 key tiles instead of ceil(N / 256); the partial tail tile is "
                      "never stored"},
      {.name = "hip-tiled-race", .kernel = kernel_id::tiled, .bug = planted_bug::missing_barrier,
       .must_produce = {"nondeterministic"}, .bug_class = "BUGCLASSES 20",
       .description = "mutant of hip-tiled: no barrier between filling a shared-memory stage and reading it; groups "
                      "read operands other groups have not stored yet"},
      {.name = "hip-tiled-atomic-order", .kernel = kernel_id::tiled, .bug = planted_bug::atomic_head_order,
       .must_produce = {"nondeterministic"}, .bug_class = "BUGCLASSES 20",
       .description = "mutant of hip-tiled: the 8 head-group partials added by shared-memory atomics in arrival "
                      "order, so the float32 rounding differs between launches"},
      {.name = "hip-tiled-row-overrun", .kernel = kernel_id::tiled, .bug = planted_bug::row_past_end,
       .must_produce = {"out-of-bounds"}, .bug_class = "out-of-bounds write (runner guard bands)",
       .description = "mutant of hip-tiled: the -inf fill runs over rows 0..m inclusive and writes one row past the "
                      "output's end (the runner's guard band catches it)"},
      {.name = "hip-paged-tiled-offset32", .kernel = kernel_id::paged_tiled, .bug = planted_bug::block_offset32,
       .must_produce = {"error-bound"}, .bug_class = "paged decode: 32-bit block offset",
       .description = "mutant of hip-paged-tiled: a block's byte offset (block x page stride) in int32; blocks past "
                      "2^31 bytes of cache read zeros, as an AMD buffer load returns 0 for an out-of-range offset "
                      "(ROCm/aiter#4774, vllm#52109)"},
  };
  return table;
}

variant variant_of(const gpu_variant_row& row) {
  const gpu_kernel& k = kernel_of(row.kernel);
  variant v;
  v.name = std::string(row.name);
  v.description = std::string(row.description);
  v.declared = fp32_contract();
  v.must_produce = row.must_produce;
  v.bug_class = std::string(row.bug_class);
  if (k.paged) {
    v.run_paged = [kernel = row.kernel, bug = row.bug](const paged::problem& p, const output_view& out, int) {
      return report_of(
          gpu::run_paged_kernel(kernel, bug, gpu::view_of(p), gpu::host_output{out.data, out.m, out.n, out.stride}));
    };
  } else {
    v.run = [kernel = row.kernel, bug = row.bug](const exact::problem& p, const output_view& out, int) {
      return report_of(
          gpu::run_kernel(kernel, bug, gpu::view_of(p), gpu::host_output{out.data, out.m, out.n, out.stride}));
    };
  }
  if (k.declare) k.declare(v);
  return v;
}

}  // namespace

std::vector<variant> gpu_variants() {
  std::vector<variant> v;
  for (const gpu_variant_row& row : rows())
    if (gpu::kernel_built(row.kernel)) v.push_back(variant_of(row));
  return v;
}

}  // namespace mqa::kernels
