// What judging the rows outside a modelled contract's sampled centre costs (compare/
// outside_centre.hpp), on a causal output of a kernel that is right: every row but the sampled
// ones read once for the poison, masking, NaN and infinities. The baseline, timed in this
// process on the same rows and threads, is the read alone (each row's bits xor-ed together, in
// vector lanes): the pass is a read of the output, and a ratio near 1 says it runs at the
// memory's speed.
// MQA_BENCH_RUN_SHAPE=MxN as for `run` (default 2048 x 65536; 8192 x 65536 is the production shape).
#include <fmt/core.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "kernels/contract.hpp"
#include "reference/bounds/accumulators.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/outside_centre.hpp"
#include "validator/inputs/inputs.hpp"

namespace {

void outside_centre_pass() {
  const auto [m, n] = mqa::bench::shape_from_environment(2048, 65536);
  const mqa::cases::suite s = mqa::cases::parse_suite(
      fmt::format("[suite]\nname = \"b\"\n[[case]]\nname = \"causal\"\nm = {}\nn = {}\nheads = 64\nhead_dim = 128\n"
                  "seed = 42\nlayout = {{ kind = \"causal\" }}\n",
                  m, n),
      "outside-centre-bench.toml");
  const mqa::inputs::tensors t = mqa::inputs::generate(s.cases[0]);
  const mqa::exact::problem p = mqa::inputs::problem_of(s.cases[0], t);
  // A right kernel's look: -inf outside each window, finite values inside.
  std::vector<float> output(static_cast<std::size_t>(m * n), -INFINITY);
  for (std::int64_t i = 0; i < m; ++i) {
    const mqa::exact::window w = mqa::exact::clamped_window(p, i);
    for (std::int64_t j = w.begin; j < w.end; ++j) output[static_cast<std::size_t>(i * n + j)] = 0.5f;
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const mqa::kernels::contract contract = mqa::kernels::declared_arithmetic(mqa::bounds::dot_accumulator::sm90_wgmma);
  const mqa::bounds::error_bound bound = mqa::bounds::derive(contract.arithmetic(), p.head_dim, p.heads);
  mqa::compare::subject in =
      mqa::compare::subject_of(p, nullptr, contract, std::nullopt, {output.data(), m, n, n}, threads);
  const mqa::compare::key_figures keys = mqa::compare::key_figures_of(p);
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 1; i + 1 < m; ++i) rows.push_back(i);  // the sample's first and last rows aside

  std::int64_t findings = 0;
  const double pass = mqa::bench::seconds_per_run([&] {
    const mqa::compare::outside_centre o = mqa::compare::judge_outside_centre(in, bound, &keys, rows);
    for (const auto& t : o.tallies) findings += t.count;
  }, 3);
  std::vector<std::uint32_t> sums(threads);
  const double read = mqa::bench::seconds_per_run([&] {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::uint32_t sum = 0;
        for (std::size_t r = rows.size() * t / threads; r < rows.size() * (t + 1) / threads; ++r) {
          const float* row = output.data() + rows[r] * n;
          for (std::int64_t j = 0; j < n; ++j) sum ^= std::bit_cast<std::uint32_t>(row[j]);
        }
        sums[t] = sum;
      });
  }, 3);
  const double bytes = static_cast<double>(rows.size()) * static_cast<double>(n) * sizeof(float);
  fmt::print("outside_centre: {} x {} causal, {} rows outside the centre ({:.2f} GiB), {} threads, {} findings\n", m, n,
             rows.size(), bytes / 0x1p30, threads, findings);
  fmt::print("  the pass  {:8.3f} s  {:6.2f} GB/s  {:.2f}x the read\n", pass, bytes / pass / 1e9, pass / read);
  fmt::print("  the read  {:8.3f} s  {:6.2f} GB/s  (baseline: each row's bits xor-ed; checksum {:08x})\n", read,
             bytes / read / 1e9, sums[0]);
}

const mqa::bench::registration kOutsideCentre{"outside_centre", outside_centre_pass};

}  // namespace
