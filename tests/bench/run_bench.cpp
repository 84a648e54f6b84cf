// Where `mqacheck run` spends its time on one case with eight variants, stage by stage:
// the inputs, the exact reference, and per variant the output buffers (poison), the launches, the
// comparator, the determinism check and the diagnosis of failing outputs (on, as `run` has it for
// correct variants, and for mutants with --diagnose-mutants). The variants are kernels as fast as
// a GPU's: copies of the exact logits, each with its own contract, three of them failing (so the
// comparator gathers its evidence for a power of two and the diagnosis runs), so that the runner's
// own costs show. Every stage is reported as a
// share of the total, and the buffers next to a baseline timed in this process: allocating and
// first touching a fresh pair, what each variant paid before the buffers were reused.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench.hpp"
#include "kernels/contract.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/runner/runner.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// MQA_BENCH_RUN_SHAPE=MxN: another causal shape (N = 65536 gives the production shape's rows).
std::string case_toml() {
  const auto [m, n] = mqa::bench::shape_from_environment(512, 16384);
  return fmt::format(R"(
[suite]
name = "run-bench"
[[case]]
name = "causal"
m = {}
n = {}
heads = 64
head_dim = 128
q_format = "e4m3fn"
k_format = "e4m3fn"
seed = 42
layout = {{ kind = "causal" }}
)",
                     m, n);
}

// A kernel that writes `scale` times the exact logits (scale 1: a correct kernel).
mqa::kernels::variant copying_variant(std::string name, mqa::bounds::dot_accumulator dot, const mqa::exact::result& r,
                                      float scale) {
  mqa::kernels::variant v;
  v.name = std::move(name);
  v.declared = mqa::kernels::declared_arithmetic(dot);
  v.run = [&r, scale](const mqa::exact::problem& p, const mqa::kernels::output_view& out, int) {
    for (std::size_t row = 0; row < r.rows.size(); ++row) {
      const float* from = r.logits.data() + row * static_cast<std::size_t>(p.n);
      float* to = out.row(r.rows[row]);
      for (std::int64_t j = 0; j < p.n; ++j) to[j] = from[j] * scale;
    }
    return mqa::kernels::launch_report{};
  };
  return v;
}

void run_stages() {
  const mqa::cases::suite s = mqa::cases::parse_suite(case_toml(), "run-bench.toml");
  const mqa::cases::case_spec& c = s.cases.front();
  auto start = clock_type::now();
  const mqa::inputs::tensors t = mqa::inputs::generate(c);
  const double inputs_s = since(start);
  const mqa::exact::problem p = mqa::inputs::problem_of(c, t);
  start = clock_type::now();
  const mqa::exact::result reference = mqa::exact::compute(p, {});
  const double reference_s = since(start);

  using mqa::bounds::dot_accumulator;
  std::vector<mqa::kernels::variant> variants;
  variants.push_back(copying_variant("exact", dot_accumulator::exact, reference, 1.0f));
  variants.push_back(copying_variant("fp32", dot_accumulator::fp32, reference, 1.0f));
  variants.push_back(copying_variant("bf16", dot_accumulator::bf16, reference, 1.0f));
  variants.push_back(copying_variant("fp22", dot_accumulator::fp22_truncated, reference, 1.0f));
  variants.push_back(copying_variant("fp32-again", dot_accumulator::fp32, reference, 1.0f));
  variants.push_back(copying_variant("halved", dot_accumulator::fp32, reference, 0.5f));
  variants.push_back(copying_variant("doubled", dot_accumulator::bf16, reference, 2.0f));
  variants.push_back(copying_variant("off", dot_accumulator::fp32, reference, 1.001f));

  // MQA_BENCH_THREADS: the runner's threads (default all cores), to see how judging scales.
  const char* threads_env = std::getenv("MQA_BENCH_THREADS");
  const unsigned threads = threads_env ? static_cast<unsigned>(std::strtoul(threads_env, nullptr, 10)) : 0;
  // As `run` does (validator/verdict): two pairs of buffers taken in turn, each variant's launches
  // begun on the queue while the previous one is judged.
  mqa::runner::buffers outputs[2];
  mqa::runner::launch_queue queue;
  mqa::runner::stage_seconds sum;
  start = clock_type::now();
  mqa::runner::launches next = mqa::runner::start(queue, variants[0], p, nullptr, outputs[0], threads);
  for (std::size_t k = 0; k < variants.size(); ++k) {
    mqa::runner::launches mine = std::move(next);
    if (k + 1 < variants.size()) next = mqa::runner::start(queue, variants[k + 1], p, nullptr, outputs[(k + 1) % 2], threads);
    const mqa::runner::outcome o = mqa::runner::run(variants[k], p, nullptr, reference, nullptr, c.topk, threads,
                                                    /*diagnose=*/true, nullptr, std::move(mine));
    sum += o.seconds;
  }
  const double variants_s = since(start);
  // Baselines: fresh buffers for one variant (allocated and first touched, as before reuse), and
  // input generation on one thread.
  start = clock_type::now();
  {
    std::vector<float> fresh(static_cast<std::size_t>(p.m * mqa::runner::padded_stride(p.n)), 1.0f);
    std::vector<float> again(fresh.size(), 2.0f);
    volatile float sink = fresh[fresh.size() / 2] + again[7];
    (void)sink;
  }
  const double fresh_buffers_s = since(start);
  const double total = inputs_s + reference_s + variants_s;
  const double logits = static_cast<double>(p.m) * static_cast<double>(p.n);
  fmt::print("run, causal M={} N={} H={} D={} e4m3fn, 8 variants as fast as GPU kernels, {} threads\n", p.m, p.n,
             p.heads, p.head_dim, threads ? threads : std::max(1u, std::thread::hardware_concurrency()));
  auto line = [&](const char* what, double seconds, const std::string& note) {
    fmt::print("  {:<34} {:7.3f} s  {:5.1f}%  {}\n", what, seconds, 100 * seconds / total, note);
  };
  line("inputs", inputs_s, "");
  line("exact reference", reference_s, fmt::format("{:.1f} M logits/s", logits / reference_s / 1e6));
  line("  8 x output buffers (poison)", sum.buffers,
       fmt::format("{:.3f} s per variant; a fresh pair: {:.3f} s", sum.buffers / 8, fresh_buffers_s));
  line("  8 x launches (copies)", sum.launches, "");
  line("  8 x comparator", sum.judge, fmt::format("{:.1f} ns per element", sum.judge / 8 / logits * 1e9));
  line("  8 x determinism", sum.determinism, "");
  line("  8 x suspicion (witness)", sum.suspicion,
       fmt::format("{:.1f}% of the comparator's time", 100 * sum.suspicion / std::max(sum.judge, 1e-9)));
  line("  8 x diagnosis", sum.diagnosis, "");
  line("  waited for buffers and launches", sum.waited,
       fmt::format("the rest of them ({:.3f} s) ran alongside judging", sum.alongside()));
  line("total", total, "");
}

const mqa::bench::registration kRun{"run", run_stages};

}  // namespace
