// Bundles (docs/design.md "Bundles"): the folder every kernel that is not ours reads its inputs from.
//
//   case.toml      the resolved case (every key, defaults applied; a one-case suite)
//   q.npy          uint8   [m, heads, head_dim]   fp8 codes in q_format
//   k.npy          uint8   [n, head_dim]          fp8 codes in k_format
//   k_scale.npy    float32 [n]
//   weights.npy    float32 [m, heads]             q's per-token scale folded in
//   ks.npy, ke.npy int32   [m]                    row i sees keys ks[i] <= j < ke[i]
//   reference.npy  float32 [m, n]                 exact::compute: correctly rounded, -inf outside windows
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "validator/case/case.hpp"
#include "validator/inputs/inputs.hpp"

namespace mqa::bundle {

struct bundle {
  std::string suite_name;
  cases::case_spec spec;  // topk resolved
  inputs::tensors inputs;
  std::vector<float> reference;  // [m, n]
};

// The case's inputs and exact reference, in memory. The case must have passed cases::validate.
bundle make_bundle(const cases::case_spec& c, std::string_view suite_name);

// Writes the bundle to `dir` atomically: every file goes into a temporary sibling folder that is
// renamed to `dir` at the end, so a reader never sees half a bundle and a failure leaves nothing
// behind. An existing `dir` is an input_error unless `replace`.
void write_bundle(const bundle& b, const std::filesystem::path& dir, bool replace = false);

// Reads a bundle back with checks: case.toml must load as exactly one case; every array must
// have the dtype and shape that case implies; windows must lie in [0, n] unless the case's
// layout sets out_of_range; k_scale must be finite (and positive unless a special says
// otherwise); the reference must be -inf outside every window. Anything else is an input_error
// naming the file.
bundle load_bundle(const std::filesystem::path& dir);

}  // namespace mqa::bundle
