// Bit-exact models of fp8 matrix instructions: one fused dot-add algorithm over parameters, the way
// reference/fp8 has one conversion over format traits. A step takes a group of fp8 products and the
// float32 accumulator, aligns them to the largest exponent among them, keeps each term to a fixed
// number of fraction bits of that exponent (truncating or flooring the rest), adds the kept terms
// exactly, and rounds the sum to the output by the instruction's rule. Instructions differ in the
// group size, the bits kept, the rounding rules, and whether even and odd products are summed apart.
//
// Exponents follow the operands' formats: an fp8 operand is s * 2^e with 1 <= s < 2, or s < 1 and
// e the format's smallest normal exponent for subnormals; a product's exponent is the sum of its
// operands' (its significand may reach 4); the float32 accumulator likewise with e >= -126. Zero
// operands never decide the alignment.
//
// Read from microsoft/MMA-Sim's description of Hopper and CDNA3. The sm90 model is checked on
// hardware by our own probes (tests/gpu/mma_probe.cu, kernels/triton/probe.py); the gfx942 model
// has NOT been run on AMD hardware (none was available), but agrees bit for bit with MMA-Sim's own
// CDNA3 implementation (tests/reference/mma/mmasim_crosscheck.py). reference/mma/README.md has the
// numbers of both.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reference/fp8/format.hpp"

namespace mqa::mma {

enum class rounding : std::uint8_t { toward_zero, down, nearest_even };

// One fused dot-add: D = round(C + sum of `products` products).
struct fused_step {
  int products = 32;         // products per step
  bool even_odd_lanes = false;  // even and odd products aligned and summed apart, then combined
  int term_bits = 13;        // fraction bits each aligned product (and, unless accumulator_apart, C) keeps
  rounding term_rule = rounding::toward_zero;
  int lane_bits = 0;         // even_odd_lanes: fraction bits of the larger lane exponent the lane sums keep
  rounding lane_rule = rounding::down;
  // The accumulator joins the products' alignment (NVIDIA), or is added after with widths of its own
  // (AMD: the products' sum keeps sum_bits, C keeps accumulator_bits, and C is dropped when its
  // exponent is more than accumulator_reach below the larger of the two).
  bool accumulator_apart = false;
  int sum_bits = 0, accumulator_bits = 0, accumulator_reach = 0;
  rounding apart_rule = rounding::down;
  int result_bits = 23;      // fraction bits of the float32 result
  rounding result_rule = rounding::nearest_even;
};

struct instruction {
  std::string_view name;   // as --accumulate spells it
  std::string_view ptx;    // the instruction it models
  int k = 32;              // products per instruction: head_dim must be a multiple
  fused_step step;
  std::uint32_t nan_bits;  // the NaN the instruction writes
  std::uint8_t formats;    // bit per fp8::format it takes
  bool hardware_validated; // checked bit for bit on the hardware by this project's probes
  std::string_view validation;  // where and how much
};

const instruction& sm90_wgmma();
const instruction& gfx942_mfma();
// Which dot accumulator stands for which instruction is the accumulator's row's business
// (reference/bounds/accumulators.hpp: `model`); reference/mma knows nothing of contracts.

// Empty when the instruction takes these formats and head_dim (and promote_every, 0 for none);
// otherwise what is wrong and what is accepted.
std::optional<std::string> why_unusable(const instruction& ins, fp8::format q, fp8::format k, std::int64_t head_dim,
                                        std::int64_t promote_every);

// A finite fp8 value as the instructions see it: m * 2^(e - 3) with m a signed integer (|m| < 16)
// and e its exponent (the format's smallest normal exponent for subnormals); m == 0 for zero.
// Decomposing each operand once lets a caller run many dots over the same rows cheaply.
struct operand {
  std::int32_t m = 0, e = 0;
};
operand decompose(double value, fp8::format f);  // value finite

// One step: `acc` plus the products a[i] * b[i] (a.size() == b.size() == step.products): of
// decoded fp8 values in formats fa and fb (NaN and infinities follow IEEE: nan_bits for NaN), or of
// decomposed finite operands.
float fused_dot_add(const fused_step& step, float acc, std::span<const double> a, fp8::format fa,
                    std::span<const double> b, fp8::format fb, std::uint32_t nan_bits);
float fused_dot_add(const fused_step& step, float acc, std::span<const operand> a, std::span<const operand> b);

// A dot product of length head_dim as a kernel computes it with the instruction: a chain of steps
// in ascending k starting from 0, and with promote_every > 0 a fresh chain every promote_every
// elements whose result is added into a float32 accumulator (round to nearest), as DeepGEMM does.
float dot(const instruction& ins, std::span<const double> a, fp8::format fa, std::span<const double> b,
          fp8::format fb, std::int64_t promote_every = 0);
float dot(const instruction& ins, std::span<const operand> a, std::span<const operand> b, std::int64_t promote_every = 0);

// Many keys against one row of operands: a sampled centre runs the model 2^34 times, one dot at a
// time far slower than the kernel it judges. Keys are laid out side by side, kLanes of them per
// group (element d of each, then element d + 1), so that the lanes run the same steps together
// (SIMD where the CPU has it, chosen at run time). dot_row gives dot()'s bits for every key.
struct key_lanes {
  static constexpr std::size_t kLanes = 16;
  std::size_t keys = 0, dim = 0;
  std::vector<std::int32_t> m, e;  // [group][d][lane]; lanes past the last key hold zeros
};
key_lanes lanes_of(std::span<const operand> keys, std::size_t dim);  // keys: [count][dim]
// The instruction sets dot_row can run its lanes with (tests pin each; `best` is the fastest the CPU has).
enum class lane_isa : std::uint8_t { best, avx512, avx2, portable };
bool lane_isa_available(lane_isa isa);
// out[j] = dot(ins, a, key j, promote_every) for every key j (out.size() == keys.keys), for
// operands decompose() made of fp8 values (the lanes rely on their exponent range).
void dot_row(const instruction& ins, std::span<const operand> a, const key_lanes& keys, std::int64_t promote_every,
             std::span<float> out, lane_isa isa = lane_isa::best);

}  // namespace mqa::mma
