// The exact reference: for every in-window element, the float32 nearest (ties to even) to the
// exact real value of
//
//   logits[i, j] = k_scale[j] * sum_h weights[i, h] * relu( sum_d q[i,h,d] * k[j,d] )
//
// on the decoded fp8 inputs, and -inf outside the window (../shared/DESIGN.md). Alongside it,
// the magnitude an error bound needs: A[i, j] = |k_scale[j]| * sum_h |w[i,h]| * sum_d |q k|.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/fp8/format.hpp"

namespace mqa::exact {

// The operation's inputs, row-major, borrowed from the caller.
struct problem {
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  fp8::format q_format = fp8::format::e4m3fn;
  fp8::format k_format = fp8::format::e4m3fn;
  std::span<const std::uint8_t> q;     // [m, heads, head_dim] codes
  std::span<const std::uint8_t> k;     // [n, head_dim] codes
  std::span<const float> k_scale;      // [n]
  std::span<const float> weights;      // [m, heads]
  std::span<const std::int32_t> ks;    // [m]
  std::span<const std::int32_t> ke;    // [m]
};

// relu as the contract declares it: IEEE/torch.relu keeps NaN; fmax (CUDA fmaxf, tl.maximum) makes it 0.
enum class relu_rule : std::uint8_t { keeps_nan, fmax };

// The window row i actually covers: [max(ks, 0), min(ke, n)), empty when that is empty.
struct window {
  std::int64_t begin = 0, end = 0;
  bool empty() const { return end <= begin; }
};
window clamped_window(const problem& p, std::int64_t row);

struct options {
  relu_rule relu = relu_rule::keeps_nan;
  unsigned threads = 0;            // 0: all hardware threads
  std::vector<std::int64_t> rows;  // rows to compute, ascending; empty: all rows
};

struct result {
  std::vector<std::int64_t> rows;  // the rows computed, in order
  std::vector<float> logits;       // [rows.size(), n]: correctly rounded in window, -inf outside
  std::vector<double> magnitude;   // [rows.size(), n]: A[i, j] (0 outside the window)
  std::int64_t undecided_by_fast_path = 0;  // elements the multiprecision fallback had to settle
};

// Throws std::invalid_argument for inconsistent sizes.
result compute(const problem& p, const options& o = {});

}  // namespace mqa::exact
