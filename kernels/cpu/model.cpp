#include "model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "reference/bounds/accumulators.hpp"
#include "reference/fp8/bfloat16.hpp"
#include "reference/fp8/convert.hpp"
#include "reference/mma/instruction.hpp"

namespace mqa::kernels::cpu {
namespace {

// Hopper's fp8 MMA keeps 13 fraction bits and truncates the rest (DeepSeek-V3 report 3.5.2):
// clear the low 52 - 13 fraction bits of an exactly computed double.
double truncate_to_13_fraction_bits(double x) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  return std::bit_cast<double>(bits & ~((std::uint64_t{1} << (52 - 13)) - 1));
}

float round_to_bf16(float x) {
  if (std::isnan(x)) return x;
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;  // RNE
  return std::bit_cast<float>(rounded);
}

float relu(float x, exact::relu_rule rule) {
  if (std::isnan(x)) return rule == exact::relu_rule::keeps_nan ? x : 0.0f;
  return x > 0 ? x : 0.0f;
}

// The dot product of one head's q row with one key as an accumulator the CPU model sums in
// software computes it (d_count <= head_dim products, in index order).
using software_dot = float (*)(const model_config& c, const double* q, const double* k, std::int64_t d_count);

float float32_sum(const model_config& c, const double* q, const double* k, std::int64_t d_count) {
  float s = 0;
  if (c.dot_chunk > 0) {
    for (std::int64_t d0 = 0; d0 < d_count; d0 += c.dot_chunk) {
      float chunk = 0;
      for (std::int64_t d = d0; d < std::min<std::int64_t>(d0 + c.dot_chunk, d_count); ++d)
        chunk += static_cast<float>(q[d]) * static_cast<float>(k[d]);
      s += chunk;
    }
  } else {
    for (std::int64_t d = 0; d < d_count; ++d) s += static_cast<float>(q[d]) * static_cast<float>(k[d]);
  }
  return s;
}

float bfloat16_rounded_sum(const model_config& c, const double* q, const double* k, std::int64_t d_count) {
  return round_to_bf16(float32_sum(c, q, k, d_count));
}

float truncated_sum(const model_config&, const double* q, const double* k, std::int64_t d_count) {
  double s = 0;
  for (std::int64_t d = 0; d < d_count; ++d) s = truncate_to_13_fraction_bits(s + q[d] * k[d]);
  return static_cast<float>(s);
}

float no_exact_dot(const model_config&, const double*, const double*, std::int64_t) {
  // No model claims it: the `exact` variant is the reference engine itself (registry.cpp).
  throw std::logic_error("the CPU model has no exact dot accumulator");
}

// The accumulators without a matrix-instruction model in their row (reference/bounds/
// accumulators.hpp), each with the loop that sums it. tests/kernels/cpu/model_test.cpp runs every
// row but `exact` through the model.
constexpr std::array<std::pair<bounds::dot_accumulator, software_dot>, 4> kSoftwareDots{{
    {bounds::dot_accumulator::exact, no_exact_dot},
    {bounds::dot_accumulator::fp32, float32_sum},
    {bounds::dot_accumulator::fp22_truncated, truncated_sum},
    {bounds::dot_accumulator::bf16, bfloat16_rounded_sum},
}};

// How one run computes its dots: on the row's instruction model, or by its software loop.
struct dot_method {
  const mma::instruction* instruction = nullptr;
  software_dot loop = nullptr;
};

dot_method dot_method_for(bounds::dot_accumulator a) {
  const bounds::dot_accumulator_traits& row = bounds::traits(a);
  if (row.model) return {row.model, nullptr};
  for (const auto& [id, loop] : kSoftwareDots)
    if (id == a) return {nullptr, loop};
  throw std::logic_error(fmt::format("the CPU model has no {} dot accumulator: its row names no instruction and "
                                     "kernels/cpu/model.cpp no loop for it", row.name));
}

float dot(const dot_method& method, const model_config& c, const exact::problem& p, const double* q, const double* k,
          std::int64_t d_count) {
  if (!method.instruction) return method.loop(c, q, k, d_count);
  // The instruction multiplies whole k-steps: a shortened dot (a planted bug) is zero-padded.
  const auto full = static_cast<std::size_t>(p.head_dim);
  if (d_count == p.head_dim)
    return mma::dot(*method.instruction, {q, full}, p.q_format, {k, full}, p.k_format, c.promote_every);
  std::vector<double> a(q, q + full), b(k, k + full);
  for (auto d = static_cast<std::size_t>(d_count); d < full; ++d) a[d] = 0, b[d] = 0;
  return mma::dot(*method.instruction, a, p.q_format, b, p.k_format, c.promote_every);
}

float pairwise_sum(float* terms, std::int64_t count) {
  for (std::int64_t width = 1; width < count; width *= 2)
    for (std::int64_t i = 0; i + width < count; i += 2 * width) terms[i] += terms[i + width];
  return count > 0 ? terms[0] : 0.0f;
}

}  // namespace

owned_problem::owned_problem(const exact::problem& p)
    : q(p.q.begin(), p.q.end()),
      k(p.k.begin(), p.k.end()),
      k_scale(p.k_scale.begin(), p.k_scale.end()),
      weights(p.weights.begin(), p.weights.end()),
      ks(p.ks.begin(), p.ks.end()),
      ke(p.ke.begin(), p.ke.end()),
      q_block_scale(p.q_block_scale.begin(), p.q_block_scale.end()),
      k_block_scale(p.k_block_scale.begin(), p.k_block_scale.end()),
      view(p) {
  refresh_view();
}

void owned_problem::refresh_view() {
  view.q = q;
  view.k = k;
  view.k_scale = k_scale;
  view.weights = weights;
  view.ks = ks;
  view.ke = ke;
  view.q_block_scale = q_block_scale;
  view.k_block_scale = k_block_scale;
}

launch_report run_model(const model_config& c, const exact::problem& original, const output_view& out,
                        int run_index, const sampled_output* only) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<owned_problem> corrupted;
  if (c.corrupt_inputs || c.fp4_scale_per_token) {
    corrupted.emplace(original);
    if (c.corrupt_inputs) c.corrupt_inputs(*corrupted);
    // The planted fp4 bug: one scale per token (its first block's) where each 32-block has its own.
    const std::int64_t blocks = original.head_dim / exact::kBlockSize;
    for (auto* scales : {&corrupted->q_block_scale, &corrupted->k_block_scale})
      if (c.fp4_scale_per_token && blocks > 0)
        for (std::size_t b = 0; b < scales->size(); ++b) (*scales)[b] = (*scales)[b - b % static_cast<std::size_t>(blocks)];
    corrupted->refresh_view();
  }
  const exact::problem& p = corrupted ? corrupted->view : original;
  const dot_method method = dot_method_for(c.dot);
  if (method.instruction) {
    if (const auto why = mma::why_unusable(*method.instruction, p.q_format, p.k_format, p.head_dim, c.promote_every))
      throw std::invalid_argument(*why);
  }
  // Decoded keys, once, block scales applied (e2m1fn): [n, D], or for a sampled run its
  // sampled keys only, [keys, D] in their order. The diagnosis runs the model a few dozen times on
  // a few keys of a large problem, where decoding (and allocating) every key, 8 M codes at
  // n = 65536, cost more than the model itself.
  std::vector<std::int64_t> every_key;
  if (!only) {
    every_key.resize(static_cast<std::size_t>(p.n));
    std::iota(every_key.begin(), every_key.end(), std::int64_t{0});
  }
  const std::span<const std::int64_t> decoded = only ? only->keys : std::span<const std::int64_t>(every_key);
  std::vector<double> keys(decoded.size() * static_cast<std::size_t>(p.head_dim));
  for (std::size_t slot = 0; slot < decoded.size(); ++slot)
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      const std::int64_t j = decoded[slot];
      double& key = keys[slot * static_cast<std::size_t>(p.head_dim) + static_cast<std::size_t>(d)];
      key = exact::k_value(p, j * p.head_dim + d);
      if (c.scale == bounds::scale_placement::into_keys_bf16)  // dequantized into bfloat16 keys, then the dot
        key = round_to_bf16(static_cast<float>(key * static_cast<double>(p.k_scale[static_cast<std::size_t>(j)] * c.scale_factor)));
    }
  std::vector<double> query(static_cast<std::size_t>(p.heads * p.head_dim));
  std::vector<float> terms(static_cast<std::size_t>(p.heads));
  std::vector<std::int64_t> head_order(static_cast<std::size_t>(p.heads));
  std::iota(head_order.begin(), head_order.end(), 0);
  if (c.head_order_varies && run_index % 2 == 1) std::reverse(head_order.begin(), head_order.end());

  // Every store goes through here, so that a narrowed offset lands where the real bug puts it.
  const std::int64_t total_floats = out.m * out.stride;
  const bool bf16 = c.logits == bounds::logits_precision::bf16;
  auto position = [](std::span<const std::int64_t> sorted, std::int64_t x) -> std::int64_t {
    const auto at = std::lower_bound(sorted.begin(), sorted.end(), x);
    return at != sorted.end() && *at == x ? at - sorted.begin() : -1;
  };
  auto store = [&](std::int64_t i, std::int64_t j, float value) {
    if (bf16) value = fp8::round_to_bfloat16(value);  // the output dtype
    const std::int64_t column = c.relative_columns ? j - p.ks[static_cast<std::size_t>(i)] : j;
    std::int64_t offset = i * out.stride + column;
    if (c.offset_limit_bytes > 0) offset = (offset * 4 % c.offset_limit_bytes) / 4;
    if (offset < 0 || offset >= total_floats) return;
    if (!only) {
      out.data[offset] = value;
      return;
    }
    // The sample names keys: a relative column is its row's ks plus the column.
    const std::int64_t stored_row = offset / out.stride;
    const std::int64_t key = offset % out.stride + (c.relative_columns ? p.ks[static_cast<std::size_t>(stored_row)] : 0);
    const std::int64_t r = position(only->rows, stored_row), k = position(only->keys, key);
    if (r >= 0 && k >= 0) only->data[r * std::ssize(only->keys) + k] = value;
  };
  const std::int64_t stored_columns =
      c.tail_block > 0 && p.n % c.tail_block != 0 ? p.n - p.n % c.tail_block : p.n;
  const std::span<const std::int64_t> columns =
      only ? only->keys : decoded.first(static_cast<std::size_t>(stored_columns));

  const std::int64_t row_count = only ? std::ssize(only->rows) : p.m;
  for (std::int64_t r = 0; r < row_count; ++r) {
    const std::int64_t i = only ? only->rows[static_cast<std::size_t>(r)] : r;
    const exact::window w = c.window_of ? c.window_of(p, i) : exact::clamped_window(p, i);
    if (c.skip_empty_rows && w.empty()) continue;
    for (std::int64_t t = 0; t < p.heads * p.head_dim; ++t)
      query[static_cast<std::size_t>(t)] = exact::q_value(p, i * p.heads * p.head_dim + t);
    for (std::size_t slot = 0; slot < columns.size(); ++slot) {
      const std::int64_t j = columns[slot];  // its decoded key at `slot` (columns are the decoded keys)
      if (j >= stored_columns) break;
      if (j < w.begin || j >= w.end) {
        if (c.outside == outside_fill::minus_inf) store(i, j, -INFINITY);
        else if (c.outside == outside_fill::zero) store(i, j, 0.0f);
        continue;
      }
      const float scale = p.k_scale[static_cast<std::size_t>(j)] * c.scale_factor;
      const std::int64_t length =
          c.dot_length > 0 ? c.dot_length : (c.dot_length < 0 ? std::max<std::int64_t>(p.head_dim + c.dot_length, 0) : p.head_dim);
      const std::int64_t dropped = c.dropped_head >= p.heads ? p.heads - 1 : c.dropped_head;
      for (std::int64_t h = 0; h < p.heads; ++h) {
        float x = dot(method, c, p, query.data() + h * p.head_dim, keys.data() + static_cast<std::ptrdiff_t>(slot) * p.head_dim, length);
        if (c.dot_to_bf16) x = round_to_bf16(x);
        const float wt = p.weights[static_cast<std::size_t>(i * p.heads + h)] * c.weight_factor;
        float term = 0;
        switch (c.scale) {
          case bounds::scale_placement::after_head_sum: term = wt * relu(x, c.relu); break;
          case bounds::scale_placement::before_relu: term = wt * relu(scale * x, c.relu); break;
          case bounds::scale_placement::into_weights: term = (scale * wt) * relu(x, c.relu); break;
          case bounds::scale_placement::into_keys_bf16: term = wt * relu(x, c.relu); break;  // scaled keys: below
        }
        terms[static_cast<std::size_t>(h)] = h == dropped ? 0.0f : term;
      }
      float sum = 0;
      if (c.head_lanes > 0) {
        // DeepGEMM sm90: each lane's partial head sum times k_scale, then the lanes added.
        for (std::int64_t lane = 0; lane < c.head_lanes; ++lane) {
          float partial = 0;
          for (std::int64_t h = lane; h < p.heads; h += c.head_lanes) partial += terms[static_cast<std::size_t>(h)];
          sum += scale * partial;
        }
        store(i, j, sum);
        continue;
      }
      if (c.pairwise_heads) {
        sum = pairwise_sum(terms.data(), p.heads);
      } else {
        for (const std::int64_t h : head_order) sum += terms[static_cast<std::size_t>(h)];
      }
      // The planted double rounding: an epilogue that keeps the head sum in the output dtype first.
      if (c.head_sum_to_bf16) sum = fp8::round_to_bfloat16(sum);
      store(i, j, c.scale == bounds::scale_placement::after_head_sum ? scale * sum : sum);
    }
  }
  launch_report report;
  report.kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace mqa::kernels::cpu
