// compute(): blocks of rows against blocks of keys, spread over threads. Per block: the exact dots
// (int8 residues, OpenBLAS dgemm or int128: residue_dots.hpp, dots.hpp), the magnitude fold
// (magnitude.hpp), then per row the certified head sum (head_sum.hpp), the exact fallback where it
// is undecided (exact_sum.hpp) and the IEEE rules where an input is not finite (special.hpp).
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "codes.hpp"
#include "dots.hpp"
#include "exact_sum.hpp"
#include "float_environment.hpp"
#include "head_sum.hpp"
#include "magnitude.hpp"
#include "reference/exact/logits.hpp"
#include "reference/fp8/bfloat16.hpp"
#include "residue_dots.hpp"
#include "reference/mma/instruction.hpp"
#include "special.hpp"
#include "validate.hpp"

namespace mqa::exact {
namespace {

using namespace detail;

// 8 rows x 64 heads = 512 GEMM rows against 512 keys: a 2 MiB block of dots that the head sum
// reads once, while OpenBLAS still runs near its peak on it.
constexpr std::int64_t kRowsPerBlock = 8;
constexpr std::int64_t kKeysPerBlock = 512;
constexpr std::int64_t kSumChunk = 128;

// The keys, prepared once and read by every thread.
struct key_side {
  std::vector<double> value;                  // [n, D] exact values, non-finite codes as 0 (float64 engine, models)
  key_magnitudes magnitude;                   // |value|, packed for fold_abt (when the magnitude is asked for)
  std::vector<std::int64_t> units;            // [n, D] value / the key's unit (int128 engine only)
  std::vector<double> unit;                   // [n] the key's unit: the code's, times its smallest block scale
  packed_keys residues;                       // int8 engine only
  std::vector<std::uint8_t> nonfinite_code;   // [n] the key has a NaN or Inf code
  std::vector<std::uint8_t> special;          // [n] ... or a non-finite k_scale
};

// One operand's block scales, token by token: a token (a key, or one head of a query
// row) has head_dim / 32 of them. Without block scales every exponent is 0.
struct block_exponents {
  std::span<const std::uint8_t> bytes;
  std::int64_t blocks = 0;  // per token

  block_exponents(std::span<const std::uint8_t> b, std::int64_t head_dim)
      : bytes(b), blocks(b.empty() ? 0 : head_dim / kBlockSize) {}
  int at(std::int64_t token, std::int64_t d) const {
    return bytes.empty() ? 0 : static_cast<int>(bytes[static_cast<std::size_t>(token * blocks + d / kBlockSize)]) - kBlockScaleBias;
  }
  int smallest(std::int64_t token) const {
    int e = bytes.empty() ? 0 : kBlockScaleMaxExponent;
    for (std::int64_t b = 0; b < blocks; ++b) e = std::min(e, at(token, b * kBlockSize));
    return e;
  }
  // The widest spread of exponents within one token: its values reach max_units * 2^span of its unit.
  int widest_span(std::int64_t tokens) const {
    int span = 0;
    for (std::int64_t t = 0; t < (bytes.empty() ? 0 : tokens); ++t) {
      int largest = -kBlockScaleMaxExponent;
      for (std::int64_t b = 0; b < blocks; ++b) largest = std::max(largest, at(t, b * kBlockSize));
      span = std::max(span, largest - smallest(t));
    }
    return span;
  }
};

struct shared_work {
  const problem& p;
  const options& o;
  code_table q_codes, k_codes;
  dot_engine engine;
  std::optional<residue_plan> plan;  // int8 engine only
  residue_kernel kernel = residue_kernel::portable;
  key_side keys;
  const std::vector<std::int64_t>& rows;
  result& out;
  std::atomic<std::int64_t> next_block{0};
  std::atomic<std::int64_t> undecided{0};
};

// The bfloat16 nearest to the exact value V whose float32 rounding is r. Every bfloat16 rounding
// boundary (midpoints, and the overflow threshold (2 - 2^-8) 2^127) is a float32 and RN32 is
// monotone, so V and r lie on the same side of every boundary but r itself: RN_bf16(V) =
// RN_bf16(r) unless r is a bfloat16 midpoint (low 16 bits 0x8000). There `side` = sign(V - r)
// decides, and V = r ties to even.
float bfloat16_of(float r, int side) {
  const auto bits = std::bit_cast<std::uint32_t>(r);
  if (!std::isfinite(r) || (bits & 0xFFFFu) != 0x8000u || side == 0) return fp8::round_to_bfloat16(r);
  const int away_from_zero = std::signbit(r) ? -side : side;
  const std::uint32_t below = bits & 0xFFFF0000u;  // the neighbour nearer zero
  return std::bit_cast<float>(away_from_zero > 0 ? below + 0x10000u : below);
}

bool is_bfloat16_midpoint(float r) { return std::isfinite(r) && (std::bit_cast<std::uint32_t>(r) & 0xFFFFu) == 0x8000u; }

// With options.known_logits no block of dots is computed: the engines' key and query forms are not needed.
bool computes_dots(const shared_work& w) { return w.o.known_logits.empty(); }
bool needs_values(const shared_work& w) {
  return computes_dots(w) && (w.engine == dot_engine::float64_gemm || w.o.dot_model != nullptr);
}
bool needs_units(const shared_work& w) { return computes_dots(w) && w.engine == dot_engine::int128; }

key_side prepare_keys(const shared_work& w) {
  const problem& p = w.p;
  const code_table& codes = w.k_codes;
  const auto n = static_cast<std::size_t>(p.n), dim = static_cast<std::size_t>(p.head_dim);
  const bool values = needs_values(w), magnitude = w.o.magnitude, units = needs_units(w);
  const block_exponents scales(p.k_block_scale, p.head_dim);
  key_side keys;
  if (values) keys.value.resize(n * dim);
  std::vector<double> abs_k;
  if (magnitude) abs_k.resize(n * dim);
  if (units) keys.units.resize(n * dim);
  keys.unit.resize(n);
  if (w.plan && computes_dots(w)) keys.residues = pack_keys(*w.plan, p.k, p.n, p.head_dim);
  keys.nonfinite_code.assign(n, 0);
  keys.special.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    const int smallest = scales.smallest(static_cast<std::int64_t>(j));
    keys.unit[j] = std::ldexp(codes.unit, smallest);
    for (std::size_t d = 0; d < dim; ++d) {
      const std::uint8_t code = p.k[j * dim + d];
      const int e = scales.at(static_cast<std::int64_t>(j), static_cast<std::int64_t>(d));
      const double value = std::ldexp(codes.value[code], e);  // exact: a power of two, no underflow
      if (values) keys.value[j * dim + d] = value;
      if (magnitude) abs_k[j * dim + d] = std::fabs(value);
      if (units) keys.units[j * dim + d] = codes.units[code] << (e - smallest);
      keys.nonfinite_code[j] |= codes.nonfinite[code];
    }
    keys.special[j] = keys.nonfinite_code[j] | !std::isfinite(p.k_scale[j]);
  }
  if (magnitude) keys.magnitude = pack_key_magnitudes(abs_k, p.n, p.head_dim);
  return keys;
}

// The engine options.dots asks for, checked against what the problem's dots need.
// Block scales widen a token's values by 2^(its exponent span) over its own unit, and
// the int8 engine's residues hold one unit per operand: block-scaled dots take float64 or int128.
dot_engine resolve_engine(const shared_work& w, std::optional<residue_plan>& plan) {
  const problem& p = w.p;
  const int q_span = block_exponents(p.q_block_scale, p.head_dim).widest_span(p.m * p.heads);
  const int k_span = block_exponents(p.k_block_scale, p.head_dim).widest_span(p.n);
  const bool block_scaled = !p.q_block_scale.empty() || !p.k_block_scale.empty();
  const dot_engine fallback =
      float_or_integer_engine(w.q_codes.max_units << q_span, w.k_codes.max_units << k_span, p.head_dim);
  if (w.o.dot_model != nullptr) return fallback;  // the model's dots replace the exact ones
  if (block_scaled && w.o.dots == dot_engine::int8_residues)
    throw std::invalid_argument("mqa::exact: options.dots = int8_residues, but block-scaled e2m1fn operands take "
                                "float64_gemm or int128 (the residues hold one unit per operand)");
  switch (w.o.dots) {
    case dot_engine::automatic:
      if (!block_scaled && best_residue_kernel() == residue_kernel::avx512_vnni)
        plan = make_residue_plan(w.q_codes, w.k_codes, w.p.head_dim);
      return plan ? dot_engine::int8_residues : fallback;
    case dot_engine::float64_gemm:
      if (fallback != dot_engine::float64_gemm)
        throw std::invalid_argument("mqa::exact: options.dots = float64_gemm, but these formats' dots at head_dim " +
                                    std::to_string(w.p.head_dim) + " can exceed 2^53 units");
      return fallback;
    case dot_engine::int128:
      return dot_engine::int128;
    case dot_engine::int8_residues:
      plan = make_residue_plan(w.q_codes, w.k_codes, w.p.head_dim);
      if (!plan)
        throw std::invalid_argument("mqa::exact: options.dots = int8_residues, but head_dim " +
                                    std::to_string(w.p.head_dim) + " needs more than 12 moduli or exceeds 2^16");
      return dot_engine::int8_residues;
  }
  return fallback;
}

// One dot in int128 from the codes: the engines' common ground, for the int8 engine's spot check.
__int128 units_dot(const code_table& qc, const code_table& kc, const std::uint8_t* q, const std::uint8_t* k,
                   std::int64_t dim) {
  __int128 sum = 0;
  for (std::int64_t d = 0; d < dim; ++d) sum += static_cast<__int128>(qc.units[q[d]]) * kc.units[k[d]];
  return sum;
}

// One dot in int128 with block scales applied: dot = sum * unit, the unit the product of the two
// tokens' own (the code's unit times the token's smallest block scale), so that every term is an integer.
struct exact_units {
  __int128 sum = 0;
  double unit = 0;
};
exact_units token_dot(const shared_work& w, std::int64_t q_token, std::int64_t key) {
  const problem& p = w.p;
  const block_exponents qs(p.q_block_scale, p.head_dim), ks(p.k_block_scale, p.head_dim);
  const int q_smallest = qs.smallest(q_token), k_smallest = ks.smallest(key);
  const std::uint8_t* q = p.q.data() + q_token * p.head_dim;
  const std::uint8_t* k = p.k.data() + key * p.head_dim;
  exact_units dot;
  for (std::int64_t d = 0; d < p.head_dim; ++d)
    dot.sum += static_cast<__int128>(w.q_codes.units[q[d]] << (qs.at(q_token, d) - q_smallest)) *
               (w.k_codes.units[k[d]] << (ks.at(key, d) - k_smallest));
  dot.unit = std::ldexp(w.q_codes.unit, q_smallest) * std::ldexp(w.k_codes.unit, k_smallest);
  return dot;
}

// One thread's buffers and the work on one block of rows.
class block_worker {
 public:
  explicit block_worker(shared_work& w) : w_(w), p_(w.p), heads_(p_.heads), dim_(p_.head_dim) {}

  // Rows [first, first + count) against keys [key_lo, key_hi) (key_lo a multiple of 16).
  void run(std::int64_t first, std::int64_t count, std::int64_t key_lo, std::int64_t key_hi) {
    std::int64_t begin = p_.n, end = 0;  // the union of the rows' windows
    for (std::int64_t r = 0; r < count; ++r) {
      const window win = clamped_window(p_, row(first + r));
      if (!win.empty()) begin = std::min(begin, win.begin), end = std::max(end, win.end);
    }
    begin = std::max(begin / 16 * 16, key_lo);  // key blocks start on a 16-key group of the packed residues
    end = std::min(end, key_hi);
    if (begin >= end) return;
    load_queries(first, count);
    for (std::int64_t key0 = begin; key0 < end; key0 += kKeysPerBlock)
      run_keys(first, count, key0, std::min(kKeysPerBlock, end - key0));
  }

 private:
  std::int64_t row(std::int64_t local_index) const { return w_.rows[static_cast<std::size_t>(local_index)]; }

  // Decodes the block's queries; folds |w| |q| over heads for the magnitude.
  void load_queries(std::int64_t first, std::int64_t count) {
    const auto cells = static_cast<std::size_t>(count * heads_ * dim_);
    const bool values = needs_values(w_), units = needs_units(w_);
    if (values) q_value_.assign(cells, 0.0);
    if (units) q_units_.assign(cells, 0);
    q_codes_.resize(cells);
    q_unit_.assign(static_cast<std::size_t>(count * heads_), 0.0);
    const block_exponents scales(p_.q_block_scale, dim_);
    q_fold_.assign(static_cast<std::size_t>(count * dim_), 0.0);
    head_nonfinite_.assign(static_cast<std::size_t>(count * heads_), 0);
    row_special_.assign(static_cast<std::size_t>(count), 0);
    for (std::int64_t r = 0; r < count; ++r) {
      const std::int64_t i = row(first + r);
      for (std::int64_t h = 0; h < heads_; ++h) {
        const float wt = p_.weights[static_cast<std::size_t>(i * heads_ + h)];
        row_special_[r] |= !std::isfinite(wt);
        const double abs_w = std::fabs(static_cast<double>(wt));
        const std::int64_t token = i * heads_ + h;
        const int smallest = scales.smallest(token);
        q_unit_[static_cast<std::size_t>(r * heads_ + h)] = std::ldexp(w_.q_codes.unit, smallest);
        for (std::int64_t d = 0; d < dim_; ++d) {
          const std::uint8_t code = p_.q[static_cast<std::size_t>(token * dim_ + d)];
          const auto at = static_cast<std::size_t>((r * heads_ + h) * dim_ + d);
          const int e = scales.at(token, d);
          const double value = std::ldexp(w_.q_codes.value[code], e);  // exact: a power of two, no underflow
          q_codes_[at] = code;
          if (values) q_value_[at] = value;
          if (units) q_units_[at] = w_.q_codes.units[code] << (e - smallest);
          head_nonfinite_[static_cast<std::size_t>(r * heads_ + h)] |= w_.q_codes.nonfinite[code];
          q_fold_[static_cast<std::size_t>(r * dim_ + d)] += abs_w * std::fabs(value);
        }
        row_special_[r] |= head_nonfinite_[static_cast<std::size_t>(r * heads_ + h)];
      }
    }
    if (w_.plan && computes_dots(w_)) pack_queries(*w_.plan, q_codes_.data(), count * heads_, dim_, q_residues_);
  }

  // The int8 engine's dot at one (gemm row g, key) of the strip starting at g0, reconstructed from
  // the strip's sums, against int128 arithmetic on the codes: a kernel that went wrong on some CPU
  // stops the computation instead of giving wrong bits.
  void spot_check(std::int64_t g, std::int64_t g0, std::int64_t key0, std::int64_t jj) {
    const std::int64_t key = key0 + jj;
    const __int128 expected = units_dot(w_.q_codes, w_.k_codes, q_codes_.data() + g * dim_, p_.k.data() + key * dim_, dim_);
    const residue_plan& plan = *w_.plan;
    double hi = 0, lo = 0;
    reconstruct_one(plan, residue_scratch_.row(g - g0) + jj, residue_scratch_.modulus_stride, hi, lo);
    const __int128 got = static_cast<__int128>(hi / plan.unit) + static_cast<__int128>(lo / plan.unit);
    if (got != expected)
      throw std::logic_error("mqa::exact: the int8 residue engine's dot differs from int128 arithmetic (gemm row " +
                             std::to_string(g) + ", key " + std::to_string(key) + ")");
  }

  void run_keys(std::int64_t first, std::int64_t count, std::int64_t key0, std::int64_t width) {
    if (w_.o.magnitude) {
      fold_.resize(static_cast<std::size_t>(count * width));
      fold_abt(q_fold_.data(), count, w_.keys.magnitude, key0, width, fold_.data());
    }
    if (!w_.o.known_logits.empty()) {
      run_keys_known(first, count, key0, width);
      return;
    }
    if (w_.engine == dot_engine::int8_residues && w_.o.dot_model == nullptr && heads_ > 0) {
      run_keys_fused(first, count, key0, width);
      return;
    }
    const auto dots = static_cast<std::size_t>(count * heads_ * width);
    dot_hi_.resize(dots);
    const std::int64_t gemm_rows = count * heads_;
    const bool pairs = w_.o.dot_model == nullptr && w_.engine == dot_engine::int128;
    if (w_.o.dot_model != nullptr) {
      model_dots(gemm_rows, key0, width);
    } else if (w_.engine == dot_engine::int8_residues) {  // heads == 0: no dots
    } else if (w_.engine == dot_engine::float64_gemm) {
      gemm_abt(q_value_.data(), w_.keys.value.data() + key0 * dim_, dot_hi_.data(), gemm_rows, width, dim_);
    } else {
      dot_lo_.resize(dots);
      int128_abt(q_units_.data(), w_.keys.units.data() + key0 * dim_, dot_hi_.data(), dot_lo_.data(), gemm_rows, width,
                 dim_, q_unit_.data(), w_.keys.unit.data() + key0);
    }
    for (std::int64_t r = 0; r < count; ++r) {
      const window win = clamped_window(p_, row(first + r));
      const std::int64_t a = std::max(win.begin, key0), b = std::min(win.end, key0 + width);
      if (a >= b) continue;
      const std::ptrdiff_t offset = r * heads_ * width + (a - key0);
      const head_sum_input in{dot_hi_.data() + offset, pairs ? dot_lo_.data() + offset : nullptr, width, heads_,
                              p_.weights.data() + row(first + r) * heads_, p_.k_scale.data() + a, b - a};
      y_.resize(static_cast<std::size_t>(b - a));
      undecided_.resize(static_cast<std::size_t>(b - a));
      if (!row_special_[r]) head_sums(in, state_, y_.data(), undecided_.data());
      finish_row(first, r, key0, width, a, b, [&](std::int64_t j) {
        for (std::int64_t h = 0; h < heads_; ++h) {
          const std::ptrdiff_t at = h * width + (j - a);
          column_hi_[static_cast<std::size_t>(h)] = in.dot_hi[at];
          column_lo_[static_cast<std::size_t>(h)] = pairs ? in.dot_lo[at] : 0.0;
        }
        return pairs;
      }, &in);
    }
  }

  // The int8 engine, strip by strip: each strip of reconstructed dots goes straight into its row's
  // head sums (no block of dots is stored); a row is finished when its last head is in. Columns of
  // dots, which only elements with a non-finite input or an undecided head sum need, are computed
  // again in int128 for those elements.
  void run_keys_fused(std::int64_t first, std::int64_t count, std::int64_t key0, std::int64_t width) {
    const std::int64_t gemm_rows = count * heads_;
    const residue_plan& plan = *w_.plan;
    const std::int64_t checked = (key0 / kKeysPerBlock + spot_++) % gemm_rows;  // this key block's spot check
    for (std::int64_t g0 = 0; g0 < gemm_rows; g0 += kResidueStrip) {
      const std::int64_t strip = std::min(kResidueStrip, gemm_rows - g0);
      for (std::int64_t g = g0; g < g0 + strip; ++g)
        if (g % heads_ == 0) head_sum_start(state_by_row_[static_cast<std::size_t>(g / heads_ - g0 / heads_)], width, plan.unit);
      // Keys in chunks whose sums (6 moduli x 8 rows x 128 keys x 4 bytes = 24 KiB) stay in L1
      // between the kernels that write them and the reconstruction that reads them.
      for (std::int64_t c0 = 0; c0 < width; c0 += kSumChunk) {
        const std::int64_t chunk = std::min(kSumChunk, width - c0);
        residue_sums(plan, w_.kernel, q_residues_, gemm_rows, g0, strip, w_.keys.residues, key0 + c0, chunk,
                     residue_scratch_);
        if (checked >= g0 && checked < g0 + strip && c0 == 0)
          spot_check(checked, g0, key0, (7 * spot_ + key0) % chunk);
        for (std::int64_t g = g0; g < g0 + strip; ++g) {
          head_sum_state& state = state_by_row_[static_cast<std::size_t>(g / heads_ - g0 / heads_)];
          reconstruct_into(plan, residue_scratch_.row(g - g0), residue_scratch_.modulus_stride, chunk,
                           p_.weights[static_cast<std::size_t>(row(first + g / heads_) * heads_ + g % heads_)],
                           state.sum.data() + c0, state.magnitude.data() + c0);
        }
      }
      for (std::int64_t g = g0; g < g0 + strip; ++g) {
        head_sum_state& state = state_by_row_[static_cast<std::size_t>(g / heads_ - g0 / heads_)];
        state.terms += plan.pairs ? 2 : 1;
        if (g % heads_ == heads_ - 1) {
          std::swap(state_, state);
          finish_fused_row(first, g / heads_, key0, width);
          std::swap(state_, state);
        }
      }
      // A row still open at the strip's end continues in the next strip: keep its state first.
      const std::int64_t last_row = (g0 + strip - 1) / heads_, first_row = g0 / heads_;
      if (last_row != first_row && (g0 + strip) % heads_ != 0) std::swap(state_by_row_[0], state_by_row_[static_cast<std::size_t>(last_row - first_row)]);
    }
  }

  // Logits given (options.known_logits): only the magnitude and the elements with a non-finite
  // input are computed.
  void run_keys_known(std::int64_t first, std::int64_t count, std::int64_t key0, std::int64_t width) {
    for (std::int64_t r = 0; r < count; ++r) {
      const window win = clamped_window(p_, row(first + r));
      const std::int64_t a = std::max(win.begin, key0), b = std::min(win.end, key0 + width);
      if (a >= b) continue;
      const float* known = w_.o.known_logits.data() + (first + r) * p_.n;
      y_.assign(known + a, known + b);
      undecided_.assign(static_cast<std::size_t>(b - a), 0);
      finish_row(first, r, key0, width, a, b, [&](std::int64_t j) {
        exact_column(row(first + r), j);
        return true;
      }, nullptr);
    }
  }

  void finish_fused_row(std::int64_t first, std::int64_t r, std::int64_t key0, std::int64_t width) {
    const std::int64_t i = row(first + r);
    const window win = clamped_window(p_, i);
    const std::int64_t a = std::max(win.begin, key0), b = std::min(win.end, key0 + width);
    if (a >= b) return;
    y_.resize(static_cast<std::size_t>(b - a));
    undecided_.resize(static_cast<std::size_t>(b - a));
    if (!row_special_[r])
      head_sum_finish(state_, a - key0, b - a, p_.k_scale.data() + a, y_.data(), undecided_.data());
    finish_row(first, r, key0, width, a, b, [&](std::int64_t j) {
      exact_column(row(first + r), j);
      return true;
    }, nullptr);
  }

  // The dots of every head of row i with key j, in int128 from the codes (non-finite codes as 0, as
  // every engine has them), as exact pairs: column_hi_, column_lo_.
  void exact_column(std::int64_t i, std::int64_t j) {
    for (std::int64_t h = 0; h < heads_; ++h) {
      const exact_units dot = token_dot(w_, i * heads_ + h, j);
      const auto hi = static_cast<double>(dot.sum);
      column_hi_[static_cast<std::size_t>(h)] = hi * dot.unit;
      column_lo_[static_cast<std::size_t>(h)] = static_cast<double>(dot.sum - static_cast<__int128>(hi)) * dot.unit;
    }
  }

  // The model's dot of every (row, head) of the block with keys [key0, key0 + width): decoded values
  // with non-finite codes as 0, as for the exact dots (elements they touch take the special path),
  // each operand decomposed once for all the dots it enters.
  void model_dots(std::int64_t gemm_rows, std::int64_t key0, std::int64_t width) {
    const mma::instruction& model = *w_.o.dot_model;
    const auto dim = static_cast<std::size_t>(dim_);
    q_operands_.resize(static_cast<std::size_t>(gemm_rows) * dim);
    for (std::size_t t = 0; t < q_operands_.size(); ++t) q_operands_[t] = mma::decompose(q_value_[t], p_.q_format);
    k_operands_.resize(static_cast<std::size_t>(width) * dim);
    for (std::size_t t = 0; t < k_operands_.size(); ++t)
      k_operands_[t] = mma::decompose(w_.keys.value[static_cast<std::size_t>(key0) * dim + t], p_.k_format);
    const mma::key_lanes keys = mma::lanes_of(k_operands_, dim);
    for (std::int64_t g = 0; g < gemm_rows; ++g) {
      const std::span<const mma::operand> q(q_operands_.data() + static_cast<std::size_t>(g) * dim, dim);
      model_row_.resize(static_cast<std::size_t>(width));
      mma::dot_row(model, q, keys, w_.o.promote_every, model_row_);
      std::copy(model_row_.begin(), model_row_.end(), dot_hi_.begin() + static_cast<std::ptrdiff_t>(g * width));
    }
  }

  // |k_scale| sum_h |w_h| relu(x'_h) over the model's dots, rounded up: H products and H - 1 sums
  // of nonnegative terms lose at most a relative (H + 1) 2^-53 each, covered by (H + 3) 2^-52.
  double model_magnitude(const head_sum_input& in, std::int64_t jj, float k_scale) const {
    double sum = 0;
    for (std::int64_t h = 0; h < heads_; ++h) {
      const double x = in.dot_hi[h * in.head_stride + jj];
      if (x > 0) sum += std::fabs(static_cast<double>(in.weights[h])) * x;
    }
    return std::fabs(static_cast<double>(k_scale)) * sum * (1.0 + static_cast<double>(heads_ + 3) * 0x1p-52);
  }

  // Row r of the block against keys [a, b) of the key block starting at key0, its head sums in y_
  // and undecided_ (unless the row is special). `gather(j)` fills column_hi_ and column_lo_ with key
  // j's dots and says whether column_lo_ counts; `block` is the block's dots (model magnitudes).
  template <class Gather>
  void finish_row(std::int64_t first, std::int64_t r, std::int64_t key0, std::int64_t width, std::int64_t a,
                  std::int64_t b, Gather&& gather, const head_sum_input* block) {
    const std::int64_t i = row(first + r);
    const auto out_row = static_cast<std::size_t>((first + r) * p_.n);
    const float* weights = p_.weights.data() + i * heads_;
    column_hi_.resize(static_cast<std::size_t>(heads_));
    column_lo_.resize(static_cast<std::size_t>(heads_));
    std::int64_t undecided = 0;
    for (std::int64_t j = a; j < b; ++j) {
      const std::int64_t jj = j - a;
      float logit = 0;
      double magnitude =
          !w_.o.magnitude ? 0.0
          : w_.o.dot_model != nullptr
              ? model_magnitude(*block, jj, p_.k_scale[j])
              : magnitude_upper_bound(std::fabs(static_cast<double>(p_.k_scale[j])) *
                                          fold_[static_cast<std::size_t>(r * width + (j - key0))],
                                      heads_, dim_);
      int side = 0;  // sign(V - logit), needed only where logit is a bfloat16 midpoint
      if (row_special_[r] || w_.keys.special[j]) {
        const bool pairs = gather(j);
        const head_sum_input column{column_hi_.data(), pairs ? column_lo_.data() : nullptr, 1, heads_, weights,
                                    p_.k_scale.data() + j, 1};
        const std::optional<float> decided = special_element(r, i, j, column, undecided, logit, side);
        if (decided) logit = *decided, magnitude = std::numeric_limits<double>::infinity();
      } else {
        if (undecided_[static_cast<std::size_t>(jj)]) {
          const bool pairs = gather(j);
          const head_sum_input column{column_hi_.data(), pairs ? column_lo_.data() : nullptr, 1, heads_, weights,
                                      p_.k_scale.data() + j, 1};
          logit = exact_logit(column, 0);
          ++undecided;
        } else {
          logit = y_[static_cast<std::size_t>(jj)];
        }
        // bf16 logits: where the float32 is a bfloat16 midpoint, the exact value's side decides.
        if (w_.o.bf16_logits && is_bfloat16_midpoint(logit)) {
          const bool pairs = gather(j);
          const head_sum_input column{column_hi_.data(), pairs ? column_lo_.data() : nullptr, 1, heads_, weights,
                                      p_.k_scale.data() + j, 1};
          side = exact_side_of(column, 0, logit);
        }
      }
      w_.out.logits[out_row + j] = logit;
      if (w_.o.magnitude) w_.out.magnitude[out_row + j] = magnitude;
      if (w_.o.bf16_logits) w_.out.logits_bf16[out_row + j] = bfloat16_of(logit, side);
    }
    w_.undecided += undecided;
  }

  // An element with a non-finite input, its dots gathered in `column` (column_hi_, column_lo_): the
  // value when that input decides it; otherwise `logit` gets the finite element's value by the
  // ordinary path (fast path, then fallback) on its column, and `side` the exact value's side of it
  // where bf16 logits need it.
  std::optional<float> special_element(std::int64_t r, std::int64_t i, std::int64_t j, const head_sum_input& column,
                                       std::int64_t& undecided, float& logit, int& side) {
    classes_.resize(static_cast<std::size_t>(heads_));
    const std::span<const std::uint8_t> key_codes = p_.k.subspan(static_cast<std::size_t>(j * dim_),
                                                                 static_cast<std::size_t>(dim_));
    for (std::int64_t h = 0; h < heads_; ++h) {
      const bool nonfinite = head_nonfinite_[static_cast<std::size_t>(r * heads_ + h)] || w_.keys.nonfinite_code[j];
      classes_[static_cast<std::size_t>(h)] =
          nonfinite ? dot_class(p_.q.subspan(static_cast<std::size_t>((i * heads_ + h) * dim_), static_cast<std::size_t>(dim_)),
                                key_codes, p_.q_format, p_.k_format)
                    : value_class::finite;
    }
    double* lo = column.dot_lo != nullptr ? column_lo_.data() : nullptr;
    const std::optional<float> decided =
        nonfinite_logit(classes_, w_.o.relu, column_hi_.data(), lo, column.weights, p_.k_scale[j]);
    if (decided) return decided;
    float y = 0;
    std::uint8_t open = 0;
    head_sums(column, column_state_, &y, &open);
    if (open) {
      y = exact_logit(column, 0);
      ++undecided;
    }
    logit = y;
    if (w_.o.bf16_logits && is_bfloat16_midpoint(y)) side = exact_side_of(column, 0, y);
    return std::nullopt;
  }

  shared_work& w_;
  const problem& p_;
  const std::int64_t heads_, dim_;
  std::vector<double> q_value_, q_unit_, q_fold_, dot_hi_, dot_lo_, fold_, column_hi_, column_lo_;
  std::vector<std::int64_t> q_units_;
  std::vector<std::uint8_t> q_codes_;
  std::vector<std::int8_t> q_residues_;
  residue_scratch residue_scratch_;
  std::int64_t spot_ = 0;
  std::vector<std::uint8_t> head_nonfinite_, row_special_, undecided_;
  std::vector<value_class> classes_;
  std::vector<mma::operand> q_operands_, k_operands_;
  std::vector<float> model_row_;
  std::vector<float> y_;
  head_sum_state state_, column_state_;
  // The head sums of the (at most kResidueStrip + 1) block rows a strip of gemm rows touches.
  std::array<head_sum_state, kResidueStrip + 1> state_by_row_;
};

// The work's tiles: blocks of kRowsPerBlock rows, each split into `splits` key ranges of `span`
// keys (a multiple of kKeysPerBlock). Few rows and many threads (a sampled model's centre, a
// diagnosis) split the keys; a whole output does not (splits 1, each block's queries loaded once).
struct tiling {
  std::int64_t blocks = 0, splits = 1, span = 0;
  std::int64_t tiles() const { return blocks * splits; }
};

tiling tiling_of(std::int64_t rows, std::int64_t n, unsigned threads) {
  tiling t;
  t.blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const std::int64_t key_blocks = std::max<std::int64_t>(1, (n + kKeysPerBlock - 1) / kKeysPerBlock);
  const std::int64_t wanted = 4 * static_cast<std::int64_t>(threads);  // tiles enough to balance
  if (threads > 1 && t.blocks > 0 && t.blocks < wanted)
    t.splits = std::clamp<std::int64_t>((wanted + t.blocks - 1) / t.blocks, 1, key_blocks);
  t.span = (key_blocks + t.splits - 1) / t.splits * kKeysPerBlock;
  t.splits = std::max<std::int64_t>(1, (key_blocks * kKeysPerBlock + t.span - 1) / t.span);
  return t;
}

void run_tiles(shared_work& work, const tiling& t) {
  const ieee_float_environment ieee;
  block_worker worker(work);
  const auto rows = static_cast<std::int64_t>(work.rows.size());
  for (std::int64_t x = work.next_block++; x < t.tiles(); x = work.next_block++) {
    const std::int64_t first = x / t.splits * kRowsPerBlock, key_lo = x % t.splits * t.span;
    worker.run(first, std::min(kRowsPerBlock, rows - first), key_lo, std::min(work.p.n, key_lo + t.span));
  }
}

}  // namespace

std::string_view to_string(dot_engine e) { return names::name_of(kDotEngineNames, e); }
std::string_view to_string(relu_rule r) { return names::name_of(kReluRuleNames, r); }

result compute(const problem& p, const options& o) {
  check_problem(p);
  if (o.dot_model != nullptr) {
    if (const auto why = mma::why_unusable(*o.dot_model, p.q_format, p.k_format, p.head_dim, o.promote_every))
      throw std::invalid_argument(*why);
  }
  result out;
  out.rows = resolve_rows(p, o.rows);
  if (!o.known_logits.empty() && o.known_logits.size() != out.rows.size() * static_cast<std::size_t>(p.n))
    throw std::invalid_argument("mqa::exact: options.known_logits has " + std::to_string(o.known_logits.size()) +
                                " values, expected rows * n = " + std::to_string(out.rows.size()) + " * " +
                                std::to_string(p.n));
  if (!o.known_logits.empty() && o.dot_model != nullptr)
    throw std::invalid_argument("mqa::exact: options.known_logits are exact logits; a dot_model's centre cannot use them");
  shared_work work{p, o, make_code_table(p.q_format, "q"), make_code_table(p.k_format, "k"), {}, {}, {}, {}, out.rows,
                   out};
  work.engine = resolve_engine(work, work.plan);
  work.kernel = best_residue_kernel();
  work.keys = prepare_keys(work);
  out.dots = work.engine;
  const std::size_t cells = out.rows.size() * static_cast<std::size_t>(p.n);
  out.logits.assign(cells, -std::numeric_limits<float>::infinity());
  if (o.magnitude) out.magnitude.assign(cells, 0.0);
  if (o.bf16_logits) out.logits_bf16.assign(cells, -std::numeric_limits<float>::infinity());

  const auto rows = static_cast<std::int64_t>(out.rows.size());
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const unsigned asked = o.threads == 0 ? hardware : o.threads;
  const tiling tiles = tiling_of(rows, p.n, asked);
  const auto threads =
      static_cast<unsigned>(std::clamp<std::int64_t>(asked, 1, std::max<std::int64_t>(tiles.tiles(), 1)));
  const blas_single_threaded blas;  // our threads split the work; OpenBLAS's own would compete
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto guarded = [&] {
    try {
      run_tiles(work, tiles);
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      work.next_block = tiles.tiles();  // the others stop after their current tile
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(guarded);
  guarded();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  out.undecided_by_fast_path = work.undecided;
  return out;
}

}  // namespace mqa::exact
