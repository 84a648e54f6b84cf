#include "validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "reference/fp8/convert.hpp"

namespace mqa::exact {

bool uses_block_scales(fp8::format f) { return f == fp8::format::e2m1fn; }

namespace {

double scaled(double code_value, std::span<const std::uint8_t> scales, std::int64_t index) {
  if (scales.empty()) return code_value;
  return std::ldexp(code_value, static_cast<int>(scales[static_cast<std::size_t>(index / kBlockSize)]) - kBlockScaleBias);
}

}  // namespace

double q_value(const problem& p, std::int64_t index) {
  return scaled(fp8::decode(p.q_format, p.q[static_cast<std::size_t>(index)]), p.q_block_scale, index);
}
double k_value(const problem& p, std::int64_t index) {
  return scaled(fp8::decode(p.k_format, p.k[static_cast<std::size_t>(index)]), p.k_block_scale, index);
}

window clamped_window(const problem& p, std::int64_t row) {
  const std::int64_t begin = std::max<std::int64_t>(p.ks[static_cast<std::size_t>(row)], 0);
  const std::int64_t end = std::min<std::int64_t>(p.ke[static_cast<std::size_t>(row)], p.n);
  return end <= begin ? window{begin, begin} : window{begin, end};
}

namespace detail {
namespace {

std::int64_t product(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw std::invalid_argument(fmt::format("mqa::exact: {} overflows", what));
  return r;
}

void check_size(const char* name, std::size_t has, std::int64_t expected, const char* shape) {
  if (static_cast<std::int64_t>(has) != expected)
    throw std::invalid_argument(
        fmt::format("mqa::exact: {} has {} entries, expected {} = {}", name, has, expected, shape));
}

// Codes of a 4-bit format are below 16; block scales come with e2m1fn and only with it, one per
// 32 elements, within 2^-20 .. 2^20 (logits.hpp).
void check_operand(const char* name, fp8::format f, std::span<const std::uint8_t> codes,
                   std::span<const std::uint8_t> scales, std::int64_t tokens, std::int64_t head_dim) {
  const fp8::format_traits& t = fp8::traits(f);
  if (t.bits < 8)
    for (std::size_t i = 0; i < codes.size(); ++i)
      if (!fp8::is_code(t, codes[i]))
        throw std::invalid_argument(fmt::format("mqa::exact: {}[{}] = {} is not an {} code (accepted: 0 .. {})", name, i,
                                                codes[i], t.name, fp8::code_count(t) - 1));
  if (!uses_block_scales(f)) {
    if (!scales.empty())
      throw std::invalid_argument(fmt::format("mqa::exact: {} has block scales, but its format {} takes none (only e2m1fn does)",
                                              name, t.name));
    return;
  }
  if (head_dim % kBlockSize != 0)
    throw std::invalid_argument(fmt::format("mqa::exact: {} is {} with a scale per {} elements, but head_dim {} is not a "
                                            "multiple of {}",
                                            name, t.name, kBlockSize, head_dim, kBlockSize));
  check_size(name == std::string_view("q") ? "q_block_scale" : "k_block_scale", scales.size(),
             tokens * (head_dim / kBlockSize), "tokens * head_dim / 32");
  for (std::size_t b = 0; b < scales.size(); ++b) {
    const int exponent = static_cast<int>(scales[b]) - kBlockScaleBias;
    if (std::abs(exponent) > kBlockScaleMaxExponent)
      throw std::invalid_argument(fmt::format("mqa::exact: {} block scale {} is ue8m0 {} = 2^{}; accepted: {} .. {} "
                                              "(2^-{} .. 2^{}), where every block-scaled product is a normal float32",
                                              name, b, scales[b], exponent, kBlockScaleBias - kBlockScaleMaxExponent,
                                              kBlockScaleBias + kBlockScaleMaxExponent, kBlockScaleMaxExponent,
                                              kBlockScaleMaxExponent));
  }
}

}  // namespace

void check_problem(const problem& p) {
  if (p.m < 0 || p.n < 0 || p.heads < 0 || p.head_dim < 0)
    throw std::invalid_argument(fmt::format("mqa::exact: sizes must be >= 0, got m={} n={} heads={} head_dim={}",
                                            p.m, p.n, p.heads, p.head_dim));
  // BLAS takes 32-bit sizes: a block is 8 * heads rows by head_dim; far beyond any attention shape.
  constexpr std::int64_t kLimit = std::int64_t{1} << 20;
  if (p.heads > kLimit || p.head_dim > kLimit)
    throw std::invalid_argument(fmt::format("mqa::exact: heads={} head_dim={} exceed this implementation's limit of {}",
                                            p.heads, p.head_dim, kLimit));
  const std::int64_t q_size = product(product(p.m, p.heads, "m * heads"), p.head_dim, "m * heads * head_dim");
  check_size("q", p.q.size(), q_size, fmt::format("m * heads * head_dim ({} * {} * {})", p.m, p.heads, p.head_dim).c_str());
  check_size("k", p.k.size(), product(p.n, p.head_dim, "n * head_dim"),
             fmt::format("n * head_dim ({} * {})", p.n, p.head_dim).c_str());
  check_size("k_scale", p.k_scale.size(), p.n, "n");
  check_size("weights", p.weights.size(), product(p.m, p.heads, "m * heads"),
             fmt::format("m * heads ({} * {})", p.m, p.heads).c_str());
  check_size("ks", p.ks.size(), p.m, "m");
  check_size("ke", p.ke.size(), p.m, "m");
  check_operand("q", p.q_format, p.q, p.q_block_scale, q_size / std::max<std::int64_t>(p.head_dim, 1), p.head_dim);
  check_operand("k", p.k_format, p.k, p.k_block_scale, p.n, p.head_dim);
}

std::vector<std::int64_t> resolve_rows(const problem& p, const std::vector<std::int64_t>& requested) {
  if (requested.empty()) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(p.m));
    std::iota(all.begin(), all.end(), std::int64_t{0});
    return all;
  }
  for (std::size_t i = 0; i < requested.size(); ++i) {
    if (requested[i] < 0 || requested[i] >= p.m)
      throw std::invalid_argument(
          fmt::format("mqa::exact: options.rows[{}] = {} is outside [0, m = {})", i, requested[i], p.m));
    if (i > 0 && requested[i] <= requested[i - 1])
      throw std::invalid_argument(fmt::format("mqa::exact: options.rows must be strictly ascending, but rows[{}] = {} "
                                              "follows rows[{}] = {}",
                                              i, requested[i], i - 1, requested[i - 1]));
  }
  return requested;
}

}  // namespace detail
}  // namespace mqa::exact
