// The proofs in head_sum.cpp and dots.hpp assume IEEE float64 in its default mode: round to
// nearest even, subnormals neither flushed nor read as zero. A host process may have changed
// that (fesetround, or crtfastmath.o's FTZ/DAZ bits when anything in it was linked with
// -ffast-math; DAZ would read a subnormal float32 weight as 0). Each thread that computes holds
// one of these: it sets the default mode and restores the thread's own mode when it ends.
#pragma once

#include <cfenv>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace mqa::exact::detail {

class ieee_float_environment {
 public:
  ieee_float_environment() {
    std::fegetenv(&saved_);
    std::fesetround(FE_TONEAREST);
#if defined(__x86_64__) || defined(__i386__)
    constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6;
    _mm_setcsr(_mm_getcsr() & ~(kFlushToZero | kDenormalsAreZero));
#endif
  }
  ~ieee_float_environment() { std::fesetenv(&saved_); }
  ieee_float_environment(const ieee_float_environment&) = delete;
  ieee_float_environment& operator=(const ieee_float_environment&) = delete;

 private:
  std::fenv_t saved_;
};

}  // namespace mqa::exact::detail
