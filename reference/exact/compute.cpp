// compute(): blocks of rows against blocks of keys, spread over threads. Per block: the exact dots
// (OpenBLAS dgemm or int128, dots.hpp), the magnitude fold (magnitude.hpp), then per row the
// certified head sum (head_sum.hpp), the exact fallback where it is undecided (exact_sum.hpp) and
// the IEEE rules where an input is not finite (special.hpp).
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "codes.hpp"
#include "dots.hpp"
#include "exact_sum.hpp"
#include "float_environment.hpp"
#include "head_sum.hpp"
#include "magnitude.hpp"
#include "reference/exact/logits.hpp"
#include "reference/fp8/bfloat16.hpp"
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

// The keys, prepared once and read by every thread.
struct key_side {
  std::vector<double> value;                  // [n, D] exact values, non-finite codes as 0
  std::vector<double> magnitude;              // [n, D] |value|
  std::vector<std::int64_t> units;            // [n, D] value / the key's unit (int128 engine only)
  std::vector<double> unit;                   // [n] the key's unit: the code's, times its smallest block scale
  std::vector<std::uint8_t> nonfinite_code;   // [n] the key has a NaN or Inf code
  std::vector<std::uint8_t> special;          // [n] ... or a non-finite k_scale
};

// One operand's block scales (issue 14), token by token: a token (a key, or one head of a query
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

key_side prepare_keys(const problem& p, const code_table& codes, dot_engine engine) {
  const auto n = static_cast<std::size_t>(p.n), dim = static_cast<std::size_t>(p.head_dim);
  const block_exponents scales(p.k_block_scale, p.head_dim);
  key_side keys;
  keys.value.resize(n * dim);
  keys.magnitude.resize(n * dim);
  if (engine == dot_engine::int128) keys.units.resize(n * dim);
  keys.unit.resize(n);
  keys.nonfinite_code.assign(n, 0);
  keys.special.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    const int smallest = scales.smallest(static_cast<std::int64_t>(j));
    keys.unit[j] = std::ldexp(codes.unit, smallest);
    for (std::size_t d = 0; d < dim; ++d) {
      const std::uint8_t code = p.k[j * dim + d];
      const int e = scales.at(static_cast<std::int64_t>(j), static_cast<std::int64_t>(d));
      keys.value[j * dim + d] = std::ldexp(codes.value[code], e);  // exact: a power of two, no underflow
      keys.magnitude[j * dim + d] = std::fabs(keys.value[j * dim + d]);
      if (engine == dot_engine::int128) keys.units[j * dim + d] = codes.units[code] << (e - smallest);
      keys.nonfinite_code[j] |= codes.nonfinite[code];
    }
    keys.special[j] = keys.nonfinite_code[j] | !std::isfinite(p.k_scale[j]);
  }
  return keys;
}

// One thread's buffers and the work on one block of rows.
class block_worker {
 public:
  explicit block_worker(shared_work& w) : w_(w), p_(w.p), heads_(p_.heads), dim_(p_.head_dim) {}

  void run(std::int64_t first, std::int64_t count) {
    load_queries(first, count);
    std::int64_t begin = p_.n, end = 0;  // the union of the rows' windows
    for (std::int64_t r = 0; r < count; ++r) {
      const window win = clamped_window(p_, row(first + r));
      if (!win.empty()) begin = std::min(begin, win.begin), end = std::max(end, win.end);
    }
    for (std::int64_t key0 = begin; key0 < end; key0 += kKeysPerBlock)
      run_keys(first, count, key0, std::min(kKeysPerBlock, end - key0));
  }

 private:
  std::int64_t row(std::int64_t local_index) const { return w_.rows[static_cast<std::size_t>(local_index)]; }

  // Decodes the block's queries; folds |w| |q| over heads for the magnitude.
  void load_queries(std::int64_t first, std::int64_t count) {
    const auto cells = static_cast<std::size_t>(count * heads_ * dim_);
    q_value_.assign(cells, 0.0);
    if (w_.engine == dot_engine::int128) q_units_.assign(cells, 0);
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
          q_value_[at] = std::ldexp(w_.q_codes.value[code], e);  // exact: a power of two, no underflow
          if (w_.engine == dot_engine::int128) q_units_[at] = w_.q_codes.units[code] << (e - smallest);
          head_nonfinite_[static_cast<std::size_t>(r * heads_ + h)] |= w_.q_codes.nonfinite[code];
          q_fold_[static_cast<std::size_t>(r * dim_ + d)] += abs_w * std::fabs(q_value_[at]);
        }
        row_special_[r] |= head_nonfinite_[static_cast<std::size_t>(r * heads_ + h)];
      }
    }
  }

  void run_keys(std::int64_t first, std::int64_t count, std::int64_t key0, std::int64_t width) {
    const auto dots = static_cast<std::size_t>(count * heads_ * width);
    dot_hi_.resize(dots);
    const std::int64_t gemm_rows = count * heads_;
    if (w_.o.dot_model != nullptr) {
      model_dots(gemm_rows, key0, width);
    } else if (w_.engine == dot_engine::float64_gemm) {
      gemm_abt(q_value_.data(), w_.keys.value.data() + key0 * dim_, dot_hi_.data(), gemm_rows, width, dim_);
    } else {
      dot_lo_.resize(dots);
      int128_abt(q_units_.data(), w_.keys.units.data() + key0 * dim_, dot_hi_.data(), dot_lo_.data(), gemm_rows, width,
                 dim_, q_unit_.data(), w_.keys.unit.data() + key0);
    }
    fold_.resize(static_cast<std::size_t>(count * width));
    gemm_abt(q_fold_.data(), w_.keys.magnitude.data() + key0 * dim_, fold_.data(), count, width, dim_);
    for (std::int64_t r = 0; r < count; ++r) {
      const window win = clamped_window(p_, row(first + r));
      const std::int64_t a = std::max(win.begin, key0), b = std::min(win.end, key0 + width);
      if (a < b) run_row(first, r, key0, width, a, b);
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
    for (std::int64_t g = 0; g < gemm_rows; ++g) {
      const std::span<const mma::operand> q(q_operands_.data() + static_cast<std::size_t>(g) * dim, dim);
      for (std::int64_t j = 0; j < width; ++j) {
        const std::span<const mma::operand> k(k_operands_.data() + static_cast<std::size_t>(j) * dim, dim);
        dot_hi_[static_cast<std::size_t>(g * width + j)] = mma::dot(model, q, k, w_.o.promote_every);
      }
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

  // Row r of the block against keys [a, b) of the key block starting at key0.
  void run_row(std::int64_t first, std::int64_t r, std::int64_t key0, std::int64_t width, std::int64_t a,
               std::int64_t b) {
    const std::int64_t i = row(first + r);
    const auto out_row = static_cast<std::size_t>((first + r) * p_.n);
    const float* weights = p_.weights.data() + i * heads_;
    const std::ptrdiff_t offset = r * heads_ * width + (a - key0);
    const bool pairs = w_.engine == dot_engine::int128 && w_.o.dot_model == nullptr;
    const head_sum_input in{dot_hi_.data() + offset,
                            pairs ? dot_lo_.data() + offset : nullptr,
                            width,
                            heads_,
                            weights,
                            p_.k_scale.data() + a,
                            b - a};
    const auto span = static_cast<std::size_t>(b - a);
    y_.resize(span);
    undecided_.resize(span);
    if (!row_special_[r]) head_sums(in, scratch_, y_.data(), undecided_.data());
    std::int64_t undecided = 0;
    for (std::int64_t j = a; j < b; ++j) {
      const std::int64_t jj = j - a;
      float logit = 0;
      double magnitude =
          w_.o.dot_model != nullptr
              ? model_magnitude(in, jj, p_.k_scale[j])
              : magnitude_upper_bound(std::fabs(static_cast<double>(p_.k_scale[j])) *
                                          fold_[static_cast<std::size_t>(r * width + (j - key0))],
                                      heads_, dim_);
      int side = 0;  // sign(V - logit), needed only where logit is a bfloat16 midpoint
      if (row_special_[r] || w_.keys.special[j]) {
        const std::optional<float> decided = special_element(r, i, j, in, jj, undecided, logit, side);
        if (decided) logit = *decided, magnitude = std::numeric_limits<double>::infinity();
      } else {
        if (undecided_[jj]) {
          logit = exact_logit(in, jj);
          ++undecided;
        } else {
          logit = y_[jj];
        }
        if (w_.o.bf16_logits && is_bfloat16_midpoint(logit)) side = exact_side_of(in, jj, logit);
      }
      w_.out.logits[out_row + j] = logit;
      w_.out.magnitude[out_row + j] = magnitude;
      if (w_.o.bf16_logits) w_.out.logits_bf16[out_row + j] = bfloat16_of(logit, side);
    }
    w_.undecided += undecided;
  }

  // An element with a non-finite input: the value when that input decides it; otherwise `logit`
  // gets the finite element's value by the ordinary path (fast path, then fallback) on its column.
  std::optional<float> special_element(std::int64_t r, std::int64_t i, std::int64_t j, const head_sum_input& in,
                                       std::int64_t jj, std::int64_t& undecided, float& logit, int& side) {
    classes_.resize(static_cast<std::size_t>(heads_));
    column_hi_.resize(static_cast<std::size_t>(heads_));
    column_lo_.resize(static_cast<std::size_t>(heads_));
    const std::span<const std::uint8_t> key_codes = p_.k.subspan(static_cast<std::size_t>(j * dim_),
                                                                 static_cast<std::size_t>(dim_));
    for (std::int64_t h = 0; h < heads_; ++h) {
      const auto hs = static_cast<std::size_t>(h);
      const std::ptrdiff_t at = h * in.head_stride + jj;
      column_hi_[hs] = in.dot_hi[at];
      column_lo_[hs] = in.dot_lo != nullptr ? in.dot_lo[at] : 0.0;
      const bool nonfinite = head_nonfinite_[static_cast<std::size_t>(r * heads_ + h)] || w_.keys.nonfinite_code[j];
      classes_[hs] = nonfinite ? dot_class(p_.q.subspan(static_cast<std::size_t>((i * heads_ + h) * dim_),
                                                        static_cast<std::size_t>(dim_)),
                                           key_codes, p_.q_format, p_.k_format)
                               : value_class::finite;
    }
    double* lo = in.dot_lo != nullptr ? column_lo_.data() : nullptr;
    const std::optional<float> decided =
        nonfinite_logit(classes_, w_.o.relu, column_hi_.data(), lo, in.weights, p_.k_scale[j]);
    if (decided) return decided;
    const head_sum_input column{column_hi_.data(), lo, 1, heads_, in.weights, p_.k_scale.data() + j, 1};
    float y = 0;
    std::uint8_t open = 0;
    head_sums(column, scratch_, &y, &open);
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
  std::vector<std::uint8_t> head_nonfinite_, row_special_, undecided_;
  std::vector<value_class> classes_;
  std::vector<mma::operand> q_operands_, k_operands_;
  std::vector<float> y_;
  head_sum_scratch scratch_;
};

void run_blocks(shared_work& work, std::int64_t blocks) {
  const ieee_float_environment ieee;
  block_worker worker(work);
  const auto rows = static_cast<std::int64_t>(work.rows.size());
  for (std::int64_t b = work.next_block++; b < blocks; b = work.next_block++) {
    const std::int64_t first = b * kRowsPerBlock;
    worker.run(first, std::min(kRowsPerBlock, rows - first));
  }
}

}  // namespace

result compute(const problem& p, const options& o) {
  check_problem(p);
  if (o.dot_model != nullptr) {
    if (const auto why = mma::why_unusable(*o.dot_model, p.q_format, p.k_format, p.head_dim, o.promote_every))
      throw std::invalid_argument(*why);
  }
  result out;
  out.rows = resolve_rows(p, o.rows);
  shared_work work{p, o, make_code_table(p.q_format, "q"), make_code_table(p.k_format, "k"), {}, {}, out.rows, out};
  // Block scales widen a token's values by 2^(its exponent span) over its own unit.
  const int q_span = block_exponents(p.q_block_scale, p.head_dim).widest_span(p.m * p.heads);
  const int k_span = block_exponents(p.k_block_scale, p.head_dim).widest_span(p.n);
  work.engine = choose_dot_engine(work.q_codes.max_units << q_span, work.k_codes.max_units << k_span, p.head_dim);
  work.keys = prepare_keys(p, work.k_codes, work.engine);
  const std::size_t cells = out.rows.size() * static_cast<std::size_t>(p.n);
  out.logits.assign(cells, -std::numeric_limits<float>::infinity());
  out.magnitude.assign(cells, 0.0);
  if (o.bf16_logits) out.logits_bf16.assign(cells, -std::numeric_limits<float>::infinity());

  const auto rows = static_cast<std::int64_t>(out.rows.size());
  const std::int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = static_cast<unsigned>(
      std::clamp<std::int64_t>(o.threads == 0 ? hardware : o.threads, 1, std::max<std::int64_t>(blocks, 1)));
  const blas_single_threaded blas;  // our threads split the work; OpenBLAS's own would compete
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto guarded = [&] {
    try {
      run_blocks(work, blocks);
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      work.next_block = blocks;  // the others stop after their current block
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
