#include "planted.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

#include "reference/fp8/bfloat16.hpp"
#include "reference/fp8/convert.hpp"

namespace mqa::kernels::cpu {

std::optional<fp8::format> fnuz_sibling(fp8::format f) {
  switch (f) {
    case fp8::format::e4m3fn: return fp8::format::e4m3fnuz;
    case fp8::format::e4m3fnuz: return fp8::format::e4m3fn;
    case fp8::format::e5m2: return fp8::format::e5m2fnuz;
    case fp8::format::e5m2fnuz: return fp8::format::e5m2;
    default: return std::nullopt;
  }
}

void read_as(owned_problem& p, std::optional<fp8::format> q_as, std::optional<fp8::format> k_as) {
  if (q_as) p.view.q_format = *q_as;
  if (k_as) p.view.k_format = *k_as;
}

void normalize_to_fnuz(owned_problem& p, bool zero_the_0x80, bool fix_nan_bytes) {
  auto fix = [&](std::vector<std::uint8_t>& codes) {
    for (auto& c : codes) {
      if (zero_the_0x80 && c == 0x80) c = 0x00;
      if (fix_nan_bytes && (c == 0x7F || c == 0xFF)) c = 0x80;
    }
  };
  if (p.view.q_format == fp8::format::e4m3fn) {
    fix(p.q);
    p.view.q_format = fp8::format::e4m3fnuz;
    for (auto& w : p.weights) w *= 2;  // q's per-token scale lives in the weights
  }
  if (p.view.k_format == fp8::format::e4m3fn) {
    fix(p.k);
    p.view.k_format = fp8::format::e4m3fnuz;
    for (auto& s : p.k_scale) s *= 2;
  }
  p.refresh_view();
}

namespace {

// The codes one MFMA lane loads at once: 8 consecutive elements along head_dim, as one 64-bit
// little-endian pack (element 0 in the low byte; FlyDSL's _load_pack_i64).
constexpr std::size_t kPackCodes = 8;
constexpr std::size_t kHalfCodes = kPackCodes / 2;

// The high half of each pack as a sign-extending widen of the low half leaves it: every byte 0xFF
// where the low half's top byte has its sign bit set, untouched otherwise (the OR keeps its bits).
void sign_extend_low_halves(std::span<std::uint8_t> codes, std::size_t head_dim) {
  for (std::size_t row = 0; row + head_dim <= codes.size(); row += head_dim)
    for (std::size_t pack = 0; pack + kHalfCodes < head_dim; pack += kPackCodes) {
      if ((codes[row + pack + kHalfCodes - 1] & 0x80) == 0) continue;
      for (std::size_t e = kHalfCodes; e < kPackCodes && pack + e < head_dim; ++e) codes[row + pack + e] = 0xFF;
    }
}

}  // namespace

void recast_for_gfx942(owned_problem& p, const fp8::recast& r, pack_recombine recombine) {
  std::array<std::uint8_t, 256> table{};
  for (unsigned c = 0; c < table.size(); ++c) table[c] = fp8::recast_code(r, static_cast<std::uint8_t>(c));
  const auto head_dim = static_cast<std::size_t>(p.view.head_dim);
  const auto factor = static_cast<float>(fp8::recast_factor(r));
  float k_factor = 1, q_factor = 1;
  auto convert = [&](std::vector<std::uint8_t>& codes, fp8::format& f) {
    if (f != r.from) return false;
    for (auto& c : codes) c = table[c];
    if (recombine == pack_recombine::sign_extended) sign_extend_low_halves(codes, head_dim);
    f = r.to;
    return true;
  };
  if (convert(p.q, p.view.q_format)) (r.factor == fp8::factor_home::k_scale ? k_factor : q_factor) *= factor;
  if (convert(p.k, p.view.k_format)) k_factor *= factor;
  for (auto& s : p.k_scale) s *= k_factor;
  for (auto& w : p.weights) w *= q_factor;  // q's per-token scale lives in the weights
  p.refresh_view();
}

fp8::recast keeping_nan(fp8::recast r) {
  r.nan_bytes_become = fp8::encode(fp8::conversion{r.to, fp8::profile_id::torch, std::nullopt},
                                   std::numeric_limits<float>::quiet_NaN());
  return r;
}

fp8::recast scrubbing_negative_zero_to(fp8::recast r, std::uint8_t written) {
  r.negative_zero_becomes = written;
  return r;
}

void requantize_k_to_fnuz(owned_problem& p, double bound) {
  if (!p.k_block_scale.empty()) return;  // block-scaled e2m1fn keys are no fp8 cast's input
  const auto& values = fp8::decode_table(p.view.k_format);
  const fp8::conversion to_fnuz{fp8::format::e4m3fnuz, fp8::profile_id::torch, std::nullopt};
  const auto d_count = static_cast<std::size_t>(p.view.head_dim);
  for (std::size_t j = 0; j < static_cast<std::size_t>(p.view.n); ++j) {
    double amax = 0;
    for (std::size_t d = 0; d < d_count; ++d)
      amax = std::max(amax, std::fabs(values[p.k[j * d_count + d]] * static_cast<double>(p.k_scale[j])));
    const double scale = amax > 0 ? amax / bound : 1.0;
    for (std::size_t d = 0; d < d_count; ++d) {
      auto& code = p.k[j * d_count + d];
      code = fp8::encode(to_fnuz, values[code] * p.k_scale[j] / scale);
    }
    p.k_scale[j] = static_cast<float>(scale);
  }
  p.view.k_format = fp8::format::e4m3fnuz;
  p.refresh_view();
}

void transpose_weights(owned_problem& p) {
  const std::int64_t m = p.view.m, h = p.view.heads;
  std::vector<float> transposed(p.weights.size());
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t k = 0; k < h; ++k)
      transposed[static_cast<std::size_t>(i * h + k)] = p.weights[static_cast<std::size_t>(k * m + i)];
  p.weights = std::move(transposed);
  p.refresh_view();
}

void round_k_scale_to_bfloat16(owned_problem& p) {
  for (float& s : p.k_scale) s = fp8::round_to_bfloat16(s);
  p.refresh_view();
}

void round_weights_to_bfloat16(owned_problem& p) {
  for (float& w : p.weights) w = fp8::round_to_bfloat16(w);
  p.refresh_view();
}

exact::window inclusive_end_window(const exact::problem& p, std::int64_t i) {
  exact::window w = exact::clamped_window(p, i);  // clamped begin; the loop runs j <= ke
  w.end = std::min<std::int64_t>(static_cast<std::int64_t>(p.ke[static_cast<std::size_t>(i)]) + 1, p.n);
  return w;
}

exact::window aligned_down_window(const exact::problem& p, std::int64_t i, std::int64_t alignment) {
  exact::window w = exact::clamped_window(p, i);
  if (!w.empty()) w.begin -= w.begin % alignment;  // DeepGEMM aligns ks down ... and forgets the gap
  return w;
}

exact::window previous_row_window(const exact::problem& p, std::int64_t i) {
  return exact::clamped_window(p, i > 0 ? i - 1 : 0);
}

exact::window next_row_window(const exact::problem& p, std::int64_t i) {
  return exact::clamped_window(p, i + 1 < p.m ? i + 1 : i);
}

exact::window unsigned_window(const exact::problem& p, std::int64_t i) {
  const auto ks = static_cast<std::uint32_t>(p.ks[static_cast<std::size_t>(i)]);
  const auto ke = static_cast<std::uint32_t>(p.ke[static_cast<std::size_t>(i)]);
  return {static_cast<std::int64_t>(ks), std::min<std::int64_t>(ke, p.n)};
}

}  // namespace mqa::kernels::cpu
