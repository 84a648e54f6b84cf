// The int8 residue engine (reference/exact/residues.hpp, residue_dots.hpp): its plan, both kernels
// against int128 arithmetic on the codes, and compute() with every engine giving the same bits.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include "cases.hpp"
#include "reference/exact/residue_dots.hpp"
#include "reference/exact/residues.hpp"

using namespace mqa;
using exact_test::owned_problem;
using fp8::format;

namespace {

using u128 = unsigned __int128;

constexpr std::array kDotFormats{format::e4m3fn, format::e4m3fnuz, format::e4m3b11fnuz, format::e5m2, format::e5m2fnuz};

// Codes of `f`: kind 0 any finite code (NaN and Inf codes count as 0 in every engine), 1 the
// largest magnitude, 2 subnormals.
std::vector<std::uint8_t> codes(format f, std::size_t count, std::mt19937_64& rng, int kind) {
  const exact::detail::code_table table = exact::detail::make_code_table(f, "q");
  std::vector<std::uint8_t> finite, largest, subnormal;
  for (unsigned c = 0; c < 256; ++c) {
    if (table.nonfinite[c]) continue;
    finite.push_back(static_cast<std::uint8_t>(c));
    const std::int64_t u = table.units[c] < 0 ? -table.units[c] : table.units[c];
    if (u == table.max_units) largest.push_back(static_cast<std::uint8_t>(c));
    const unsigned magnitude_bits = c & 0x7Fu;  // exponent field 0, mantissa not: a subnormal
    if (u != 0 && magnitude_bits < (1u << fp8::traits(f).mantissa_bits)) subnormal.push_back(static_cast<std::uint8_t>(c));
  }
  const std::vector<std::uint8_t>& pool = kind == 1 ? largest : kind == 2 ? subnormal : finite;
  std::vector<std::uint8_t> out(count);
  for (auto& c : out) c = pool[rng() % pool.size()];
  return out;
}

}  // namespace

TEST_CASE("the residue plan: pairwise coprime moduli whose product exceeds 2B + B/8", "[exact][residues]") {
  for (std::size_t a = 0; a < exact::detail::kModuli.size(); ++a)
    for (std::size_t b = a + 1; b < exact::detail::kModuli.size(); ++b)
      CHECK(std::gcd(exact::detail::kModuli[a], exact::detail::kModuli[b]) == 1);
  const format qf = GENERATE(from_range(kDotFormats));
  const format kf = GENERATE(from_range(kDotFormats));
  const std::int64_t dim = GENERATE(1, 16, 128, 1024, 65536);
  CAPTURE(fp8::traits(qf).name, fp8::traits(kf).name, dim);
  const auto q = exact::detail::make_code_table(qf, "q"), k = exact::detail::make_code_table(kf, "k");
  const auto plan = exact::detail::make_residue_plan(q, k, dim);
  REQUIRE(plan);
  const u128 bound = static_cast<u128>(q.max_units) * static_cast<u128>(k.max_units) * static_cast<u128>(dim);
  u128 product = 1, without_last = 1;
  for (int i = 0; i < plan->moduli; ++i) {
    product *= static_cast<u128>(exact::detail::kModuli[static_cast<std::size_t>(i)]);
    if (i + 1 < plan->moduli) without_last *= static_cast<u128>(exact::detail::kModuli[static_cast<std::size_t>(i)]);
  }
  CHECK(product >= 2 * bound + bound / 8);
  CHECK((plan->moduli == 1 || without_last < 2 * bound + bound / 8));  // the fewest that suffice
  CHECK(plan->pairs == (plan->groups > 2));
  if (qf != format::e5m2 && qf != format::e5m2fnuz && kf != format::e5m2 && kf != format::e5m2fnuz && dim == 128)
    CHECK(plan->moduli == 6);  // e4m3 pairs at the indexer's head_dim: 6 moduli, one float64 per dot
  CHECK_FALSE(exact::detail::make_residue_plan(q, k, 65537));  // int32 sums hold D <= 2^16 only
}

TEST_CASE("both residue kernels give every dot exactly: random, largest and subnormal codes, odd sizes",
          "[exact][residues]") {
  const format qf = GENERATE(from_range(kDotFormats));
  const format kf = GENERATE(format::e4m3fn, format::e5m2fnuz);
  // 0: any finite code; 1: the largest magnitude only (dots at +-B, signs mixed); 2: subnormals.
  const int kind = GENERATE(0, 1, 2);
  const std::int64_t dim = GENERATE(7, 128, 1000);
  CAPTURE(fp8::traits(qf).name, fp8::traits(kf).name, kind, dim);
  const auto qt = exact::detail::make_code_table(qf, "q"), kt = exact::detail::make_code_table(kf, "k");
  const auto plan = exact::detail::make_residue_plan(qt, kt, dim);
  REQUIRE(plan);
  constexpr std::int64_t kRows = 11, kKeys = 37;  // a strip and a half; two key groups and a part
  std::mt19937_64 rng(static_cast<std::uint64_t>(dim * 97 + kind * 13) + static_cast<std::uint64_t>(qf) * 7);
  std::vector<std::uint8_t> q = codes(qf, static_cast<std::size_t>(kRows * dim), rng, kind);
  std::vector<std::uint8_t> k = codes(kf, static_cast<std::size_t>(kKeys * dim), rng, kind);
  if (kind == 1) {  // rows 0 and 1 meet key 0 at +B and -B exactly
    const auto positive = [&](const exact::detail::code_table& t, std::uint8_t c) { return t.units[c] > 0; };
    for (std::int64_t d = 0; d < dim; ++d) {
      while (!positive(kt, k[static_cast<std::size_t>(d)])) k[static_cast<std::size_t>(d)] ^= 0x80;
      while (!positive(qt, q[static_cast<std::size_t>(d)])) q[static_cast<std::size_t>(d)] ^= 0x80;
      q[static_cast<std::size_t>(dim + d)] = q[static_cast<std::size_t>(d)] ^ 0x80;
    }
  }
  const exact::detail::packed_keys keys = exact::detail::pack_keys(*plan, k, kKeys, dim);
  std::vector<std::int8_t> queries;
  exact::detail::pack_queries(*plan, q.data(), kRows, dim, queries);
  for (const auto kernel : {exact::detail::residue_kernel::portable, exact::detail::best_residue_kernel()}) {
    CAPTURE(static_cast<int>(kernel));
    std::vector<double> hi(static_cast<std::size_t>(kRows * kKeys)), lo(hi.size());
    exact::detail::residue_scratch scratch;
    exact::detail::residue_abt(*plan, kernel, queries, kRows, keys, 0, kKeys, hi.data(), plan->pairs ? lo.data() : nullptr,
                               scratch);
    std::int64_t wrong = 0;
    for (std::int64_t r = 0; r < kRows; ++r)
      for (std::int64_t j = 0; j < kKeys; ++j) {
        __int128 expected = 0;
        for (std::int64_t d = 0; d < dim; ++d)
          expected += static_cast<__int128>(qt.units[q[static_cast<std::size_t>(r * dim + d)]]) *
                      kt.units[k[static_cast<std::size_t>(j * dim + d)]];
        const auto at = static_cast<std::size_t>(r * kKeys + j);
        const __int128 got = static_cast<__int128>(hi[at] / plan->unit) +
                             (plan->pairs ? static_cast<__int128>(lo[at] / plan->unit) : 0);
        if (got != expected) ++wrong;
        if (plan->pairs) CHECK(std::fabs(lo[at]) <= std::fabs(hi[at]) * 0x1p-53);  // hi = RN(x), as head sums need
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("every engine gives the same bits, and the int8 one matches the oracle", "[exact][residues]") {
  auto [qf, kf, dim] = GENERATE(table<format, format, std::int64_t>({
      {format::e4m3fn, format::e4m3fn, 128},
      {format::e4m3fnuz, format::e4m3b11fnuz, 13},
      {format::e5m2, format::e5m2, 64},
      {format::e5m2fnuz, format::e4m3fn, 32},
  }));
  CAPTURE(fp8::traits(qf).name, fp8::traits(kf).name, dim);
  owned_problem p(9, 40, 5, dim, qf, kf);
  exact_test::fill_random(p, 314 + static_cast<std::uint64_t>(dim));
  exact::options o;
  o.threads = 2;
  o.dots = exact::dot_engine::int8_residues;
  const exact::result residues = exact::compute(p.view(), o);
  REQUIRE(residues.dots == exact::dot_engine::int8_residues);
  const auto mismatch = exact_test::first_mismatch(p, residues);
  INFO(mismatch.value_or(""));
  CHECK(!mismatch);
  o.dots = exact::dot_engine::int128;
  const exact::result int128 = exact::compute(p.view(), o);
  CHECK(int128.dots == exact::dot_engine::int128);
  CHECK(std::memcmp(int128.logits.data(), residues.logits.data(), residues.logits.size() * sizeof(float)) == 0);
  CHECK(int128.magnitude == residues.magnitude);
  const bool fits_float64 = (qf != format::e5m2 && qf != format::e5m2fnuz) && (kf != format::e5m2 && kf != format::e5m2fnuz);
  o.dots = exact::dot_engine::float64_gemm;
  if (fits_float64) {
    const exact::result float64 = exact::compute(p.view(), o);
    CHECK(std::memcmp(float64.logits.data(), residues.logits.data(), residues.logits.size() * sizeof(float)) == 0);
  } else {
    CHECK_THROWS_AS(exact::compute(p.view(), o), std::invalid_argument);
  }
}

TEST_CASE("known logits: only the magnitude and the elements a non-finite input touches are computed",
          "[exact][residues]") {
  owned_problem p(6, 20, 3, 16);
  exact_test::fill_random(p, 99);
  p.q_at(2, 1, 3) = 0x7F;  // a NaN code: row 2's elements depend on the relu rule
  p.k_scale[5] = HUGE_VALF;
  const auto rule = GENERATE(exact::relu_rule::keeps_nan, exact::relu_rule::fmax);
  exact::options full;
  full.relu = rule;
  const exact::result expected = exact::compute(p.view(), full);
  exact::options keeps;
  const exact::result stored = exact::compute(p.view(), keeps);  // what a bundle's reference.npy holds
  exact::options known = full;
  known.known_logits = stored.logits;
  const exact::result got = exact::compute(p.view(), known);
  CHECK(std::memcmp(got.logits.data(), expected.logits.data(), expected.logits.size() * sizeof(float)) == 0);
  CHECK(got.magnitude == expected.magnitude);
  known.known_logits = std::span<const float>(stored.logits).first(5);
  CHECK_THROWS_AS(exact::compute(p.view(), known), std::invalid_argument);
}
