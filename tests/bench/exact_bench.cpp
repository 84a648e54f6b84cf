// The exact reference's throughput on DeepSeek's indexer shape (causal M=1024, N=8192, H=64,
// D=128, e4m3fn; row i sees keys [0, N - M + i + 1)), next to the baselines timed in this process:
//   (a) a plain float64 triple loop (not correctly rounded), timed on a few rows and extrapolated;
//   (c) OpenBLAS dgemm's flop rate on this machine, the roofline of float64 dot products;
//   (d) the same reference with its dots on dgemm (dot_engine::float64_gemm), the engine a CPU
//       without AVX-512 VNNI uses.
// The engines are timed alternately, best of several runs each, so that a neighbour's load on a
// shared machine hits both alike. The last line, "RESULT key=value ...", is what
// tests/bench/exact_bench.py reads to put NumPy's einsum (b) next to these numbers.
#include <cblas.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "reference/exact/logits.hpp"
#include "reference/fp8/convert.hpp"

namespace {

using mqa::bench::seconds_per_run;

constexpr std::int64_t kM = 1024, kN = 8192, kH = 64, kD = 128;

struct indexer_case {
  std::vector<std::uint8_t> q, k;
  std::vector<float> k_scale, weights;
  std::vector<std::int32_t> ks, ke;
  mqa::exact::problem view() const {
    return {kM, kN, kH, kD, mqa::fp8::format::e4m3fn, mqa::fp8::format::e4m3fn, q, k, k_scale, weights, ks, ke};
  }
};

indexer_case make_case() {
  indexer_case c;
  std::mt19937_64 rng(2024);
  auto code = [&] {  // any finite e4m3fn code (0x7F / 0xFF are NaN)
    for (;;) {
      const auto b = static_cast<std::uint8_t>(rng() & 0xFF);
      if ((b & 0x7F) != 0x7F) return b;
    }
  };
  c.q.resize(static_cast<std::size_t>(kM * kH * kD));
  c.k.resize(static_cast<std::size_t>(kN * kD));
  for (auto& b : c.q) b = code();
  for (auto& b : c.k) b = code();
  std::uniform_real_distribution<float> weight(-1.0f, 1.0f), scale(0.5f, 2.0f);
  c.weights.resize(static_cast<std::size_t>(kM * kH));
  for (auto& w : c.weights) w = weight(rng);
  c.k_scale.resize(static_cast<std::size_t>(kN));
  for (auto& s : c.k_scale) s = scale(rng);
  for (std::int64_t i = 0; i < kM; ++i) {
    c.ks.push_back(0);
    c.ke.push_back(static_cast<std::int32_t>(kN - kM + i + 1));
  }
  return c;
}

// (a): the formula as three loops in float64, one thread.
double plain_loop_seconds_per_logit(const indexer_case& c, std::int64_t rows) {
  const auto& table = mqa::fp8::decode_table(mqa::fp8::format::e4m3fn);
  std::vector<double> k(c.k.size());
  for (std::size_t x = 0; x < k.size(); ++x) k[x] = table[c.k[x]];
  std::vector<double> q(static_cast<std::size_t>(kH * kD));
  std::vector<float> out(static_cast<std::size_t>(kN));
  std::int64_t logits = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t i = r * (kM / rows);  // rows spread over the causal range
    for (std::size_t x = 0; x < q.size(); ++x) q[x] = table[c.q[static_cast<std::size_t>(i * kH * kD) + x]];
    for (std::int64_t j = c.ks[static_cast<std::size_t>(i)]; j < c.ke[static_cast<std::size_t>(i)]; ++j) {
      double sum = 0;
      for (std::int64_t h = 0; h < kH; ++h) {
        double dot = 0;
        for (std::int64_t d = 0; d < kD; ++d) dot += q[static_cast<std::size_t>(h * kD + d)] * k[static_cast<std::size_t>(j * kD + d)];
        sum += c.weights[static_cast<std::size_t>(i * kH + h)] * std::max(dot, 0.0);
      }
      out[static_cast<std::size_t>(j)] = static_cast<float>(c.k_scale[static_cast<std::size_t>(j)] * sum);
      ++logits;
    }
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  volatile float sink = out[0];
  (void)sink;
  return elapsed.count() / static_cast<double>(logits);
}

// (c): dgemm C[4096, 4096] = A[4096, 128] B[4096, 128]^T, the depth of the indexer's dots.
double dgemm_flops(int threads) {
  constexpr int kRows = 4096, kCols = 4096, kDepth = static_cast<int>(kD);
  std::vector<double> a(static_cast<std::size_t>(kRows) * kDepth, 0.5), b(static_cast<std::size_t>(kCols) * kDepth, 0.25),
      out(static_cast<std::size_t>(kRows) * kCols);
  const int previous = openblas_get_num_threads();
  openblas_set_num_threads(threads);
  const double s = seconds_per_run(
      [&] {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kRows, kCols, kDepth, 1.0, a.data(), kDepth, b.data(),
                    kDepth, 0.0, out.data(), kCols);
      },
      3);
  openblas_set_num_threads(previous);
  return 2.0 * kRows * kCols * kDepth / s;
}

void exact_throughput() {
  const indexer_case c = make_case();
  std::int64_t logits = 0;
  for (std::int64_t i = 0; i < kM; ++i) logits += c.ke[static_cast<std::size_t>(i)] - c.ks[static_cast<std::size_t>(i)];
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const double flops_per_logit = 2.0 * kH * kD;

  mqa::exact::result r, r64;
  mqa::exact::options fastest, on_dgemm;
  on_dgemm.dots = mqa::exact::dot_engine::float64_gemm;
  double exact_s = 1e300, dgemm_engine_s = 1e300;
  for (int round = 0; round < 4; ++round) {  // alternately, each engine first in every other round
    auto fast = [&] { exact_s = std::min(exact_s, seconds_per_run([&] { r = mqa::exact::compute(c.view(), fastest); }, 1)); };
    auto dgemm_engine = [&] {
      dgemm_engine_s = std::min(dgemm_engine_s, seconds_per_run([&] { r64 = mqa::exact::compute(c.view(), on_dgemm); }, 1));
    };
    if (round % 2 == 0) fast(), dgemm_engine();
    else dgemm_engine(), fast();
  }
  const bool same = r.logits == r64.logits;  // bit for bit: -inf == -inf, no NaN here
  constexpr std::int64_t kLoopRows = 4;
  const double loop_s_per_logit = plain_loop_seconds_per_logit(c, kLoopRows);
  const double dgemm_all = dgemm_flops(static_cast<int>(threads));
  const double dgemm_one = dgemm_flops(1);

  const double exact_rate = static_cast<double>(logits) / exact_s;
  const double dgemm_engine_rate = static_cast<double>(logits) / dgemm_engine_s;
  fmt::print("exact reference, causal M={} N={} H={} D={} e4m3fn: {} in-window logits, {} threads\n", kM, kN, kH, kD,
             logits, threads);
  fmt::print("  exact, {} dots                {:8.2f} M logits/s  ({:.3f} s; {} undecided by the fast path)\n",
             mqa::exact::to_string(r.dots), exact_rate / 1e6, exact_s, r.undecided_by_fast_path);
  fmt::print("  (d) exact, float64-gemm dots        {:8.2f} M logits/s  ({:.3f} s); {} bits\n", dgemm_engine_rate / 1e6,
             dgemm_engine_s, same ? "the same" : "DIFFERENT");
  fmt::print("  (a) float64 triple loop, 1 thread   {:8.2f} M logits/s  (timed on {} rows, extrapolated: {:.1f} s for all)\n",
             1e-6 / loop_s_per_logit, kLoopRows, loop_s_per_logit * static_cast<double>(logits));
  fmt::print("  (c) OpenBLAS dgemm 4096x4096x128    {:8.1f} GFlop/s on {} threads, {:.1f} GFlop/s on 1\n", dgemm_all / 1e9,
             threads, dgemm_one / 1e9);
  fmt::print("      exact's dot-product flops       {:8.1f} GFlop/s = {:.0f}% of dgemm ({} flops per logit)\n",
             exact_rate * flops_per_logit / 1e9, 100.0 * exact_rate * flops_per_logit / dgemm_all, flops_per_logit);
  fmt::print("      exact vs (d)                    {:8.2f}x\n", exact_rate / dgemm_engine_rate);
  fmt::print("      exact vs (a)                    {:8.1f}x\n", exact_rate * loop_s_per_logit);
  fmt::print("RESULT exact_logits_per_s={:.6e} dgemm_engine_logits_per_s={:.6e} loop_logits_per_s={:.6e} dgemm_flops={:.6e} "
             "logits={} threads={} engine={}\n",
             exact_rate, dgemm_engine_rate, 1.0 / loop_s_per_logit, dgemm_all, logits, threads, mqa::exact::to_string(r.dots));
}

const mqa::bench::registration kExact{"exact", exact_throughput};

}  // namespace
