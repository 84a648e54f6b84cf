// Problems for the GPU tests and the full-size run: an owning problem, inputs drawn fast and
// deterministically (a counter-based generator, so the values do not depend on the thread
// count), and the window layouts the bug classes need.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reference/exact/logits.hpp"
#include "reference/fp8/format.hpp"

namespace mqa::gpu_test {

struct owned_problem {
  std::string name;
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  std::int64_t stride = 0;  // output row stride (>= n)
  fp8::format q_format = fp8::format::e4m3fn, k_format = fp8::format::e4m3fn;
  std::vector<std::uint8_t> q, k;
  std::vector<float> k_scale, weights;
  std::vector<std::int32_t> ks, ke;

  exact::problem view() const {
    return {m, n, heads, head_dim, q_format, k_format, q, k, k_scale, weights, ks, ke};
  }
};

enum class layout : std::uint8_t {
  causal,   // the last m queries of an n-key context: ks = 0, ke = n - m + i + 1
  ragged,   // windows of every kind: ks > 0 unaligned, empty, ks > ke, ks < 0, ke > n
};

struct problem_spec {
  std::string_view name;  // a literal: an aggregate of views, not strings, in the tests' GENERATE tables
  std::int64_t m = 0, n = 0, heads = 64, head_dim = 128;
  std::int64_t stride = 0;  // 0: n
  fp8::format q_format = fp8::format::e4m3fn, k_format = fp8::format::e4m3fn;
  layout windows = layout::causal;
  std::uint64_t seed = 1;
  bool specials = false;  // a few NaN codes in q and k, an infinite k_scale
  bool every_code = false;  // q and k codes drawn uniformly from every finite code (every exponent,
                            // subnormals, both zeros) instead of normal samples
};

// q and k: normal samples quantized per token to the format's range, as indexer inputs are
// (an inverse-CDF table of codes, drawn by a counter-based generator); weights normal over
// sqrt(heads); k_scale positive, spread over two octaves. With every_code, q and k are uniform
// over the finite codes: dots whose products span the format's whole exponent range.
owned_problem make_problem(const problem_spec& spec);

}  // namespace mqa::gpu_test
