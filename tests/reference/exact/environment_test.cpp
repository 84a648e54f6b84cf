// compute() is correct whatever floating-point mode the calling thread is in (flush-to-zero,
// denormals-are-zero, another rounding direction), and leaves that mode as it found it.
#include <catch2/catch.hpp>

#include <cfenv>

#include "cases.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

using namespace mqa;

TEST_CASE("a caller's FTZ/DAZ and rounding direction do not change the result", "[exact]") {
  // Subnormal float32 weights and k_scale: denormals-are-zero would read them as 0.
  exact_test::owned_problem p(3, 4, 2, 8);
  exact_test::fill_random(p, 12);
  p.ks.assign(3, 0), p.ke.assign(3, 4);
  p.w_at(0, 0) = 0x1p-149f, p.w_at(1, 1) = -0x1.8p-140f, p.w_at(2, 0) = 0x1p-127f;
  p.k_scale[1] = 0x1p-145f, p.k_scale[2] = -0x1.4p-130f;
  const exact::result plain = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 1, {}});
  const auto mismatch = exact_test::first_mismatch(p, plain);
  INFO(mismatch.value_or(""));
  REQUIRE(!mismatch);

  constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6;
  const unsigned csr = _mm_getcsr();
  const int round = std::fegetround();
  const int direction = GENERATE(FE_TONEAREST, FE_UPWARD, FE_TOWARDZERO);
  std::fesetround(direction);
  _mm_setcsr(_mm_getcsr() | kFlushToZero | kDenormalsAreZero);
  const unsigned odd_csr = _mm_getcsr();
  const exact::result odd = exact::compute(p.view(), {exact::relu_rule::keeps_nan, 1, {}});
  const unsigned after_csr = _mm_getcsr();
  _mm_setcsr(csr);
  std::fesetround(round);
  CHECK(after_csr == odd_csr);  // the caller's mode is restored
  for (std::size_t x = 0; x < plain.logits.size(); ++x) {
    CAPTURE(x);
    CHECK(exact_test::bits(odd.logits[x]) == exact_test::bits(plain.logits[x]));
  }
  CHECK(odd.magnitude == plain.magnitude);
}
#endif
