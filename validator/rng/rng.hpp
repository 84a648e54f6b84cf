// The one source of randomness: a counter-based generator. A draw is a pure function of
// (seed, stream, index), so the same case gives the same bytes on every compiler, libc and CPU,
// in any order and on any number of threads. Nothing here uses <random>, whose distributions
// are implementation-defined, or libm.
#pragma once

#include <cstdint>

namespace mqa::inputs {

// What a draw is for. Each tensor or decision has its own stream, so adding draws to one can
// never shift another's values. The numbers are part of the bundle format: never renumber.
enum class stream : std::uint64_t {
  q_values = 1,
  k_values = 2,
  weights = 3,
  layout = 4,
  specials = 5,
  packing = 6,
  out_of_range = 7,
  paged_lengths = 8,  // a paged case's drawn context lengths
  paged_table = 9,    // its block table: the shuffled pool, stale entries
  paged_padding = 10, // the bytes of its pages past the payload
};

// The SplitMix64 finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a bijection of 64-bit words that mixes every input bit into every
// output bit.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

// The high 64 bits of a * b, in portable integer arithmetic (no __int128).
constexpr std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32;
  const std::uint64_t b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (cross >> 32);
}

class counter_rng {
 public:
  constexpr counter_rng(std::uint64_t seed, stream s) : key_(mix64(seed ^ mix64(static_cast<std::uint64_t>(s)))) {}

  // 64 uniform bits for draw number `index`.
  constexpr std::uint64_t bits(std::uint64_t index) const { return mix64(key_ ^ mix64(index)); }

  // Uniform in [0, bound) for bound >= 1, by multiply-high (Lemire): the bias is below 2^-32
  // for every bound used here, and the result depends on integers only.
  constexpr std::uint64_t below(std::uint64_t index, std::uint64_t bound) const { return mul_high(bits(index), bound); }

  // True with probability `fraction` in [0, 1]: compares 53 bits against fraction * 2^53, both
  // exact (a product by a power of two and a conversion of an integer-valued double).
  constexpr bool chance(std::uint64_t index, double fraction) const {
    const auto threshold = static_cast<std::uint64_t>(fraction * 0x1p53);
    return (bits(index) >> 11) < threshold;
  }

  // The key bits() mixes with: for a form of bits() in vector lanes.
  constexpr std::uint64_t key() const { return key_; }

  // An independent generator for a part of this stream (one special value, one tensor).
  constexpr counter_rng fork(std::uint64_t part) const { return counter_rng(key_ ^ mix64(~part)); }

 private:
  explicit constexpr counter_rng(std::uint64_t key) : key_(mix64(key)) {}
  std::uint64_t key_;
};

}  // namespace mqa::inputs
