// The files of a bundle and the shape each one has for a given case: one table shared by the
// writer and the reader, so the two cannot disagree.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "validator/inputs/inputs.hpp"

namespace mqa::bundle {

inline constexpr std::string_view kCaseFile = "case.toml";

enum class array_file : std::uint8_t { q, k, k_scale, weights, ks, ke, reference, q_sf, k_sf };

struct array_file_info {
  array_file id;
  std::string_view file;
  std::string_view typestring;  // numpy's, as io::npy_header holds it
};

// q_sf and k_sf (issue 14) exist only for e2m1fn operands: their ue8m0 block scales, one byte per
// 32 elements, in the byte order of DeepGEMM's packed int32 (`.view(np.int32)` packs four).
inline constexpr std::array<array_file_info, 9> kArrayFiles{{
    {array_file::q, "q.npy", "|u1"},
    {array_file::k, "k.npy", "|u1"},
    {array_file::k_scale, "k_scale.npy", "<f4"},
    {array_file::weights, "weights.npy", "<f4"},
    {array_file::ks, "ks.npy", "<i4"},
    {array_file::ke, "ke.npy", "<i4"},
    {array_file::reference, "reference.npy", "<f4"},
    {array_file::q_sf, "q_sf.npy", "|u1"},
    {array_file::k_sf, "k_sf.npy", "|u1"},
}};

// e2m1fn codes are stored two per byte (the element at the even index in the low nibble), as
// DeepGEMM's per_token_cast_to_fp4 and torch's float4_e2m1fn_x2 lay them out.
inline bool packed(fp8::format f) { return fp8::traits(f).bits == 4; }

// Whether a bundle of these tensors has the file (the block scales only for e2m1fn operands).
inline bool present(array_file f, const inputs::tensors& t) {
  if (f == array_file::q_sf) return packed(t.q_format);
  if (f == array_file::k_sf) return packed(t.k_format);
  return true;
}

inline std::vector<std::size_t> shape_of(array_file f, const inputs::tensors& t) {
  const auto m = static_cast<std::size_t>(t.m), n = static_cast<std::size_t>(t.n);
  const auto h = static_cast<std::size_t>(t.heads), d = static_cast<std::size_t>(t.head_dim);
  switch (f) {
    case array_file::q: return {m, h, packed(t.q_format) ? d / 2 : d};
    case array_file::k: return {n, packed(t.k_format) ? d / 2 : d};
    case array_file::q_sf: return {m, h, d / 32};
    case array_file::k_sf: return {n, d / 32};
    case array_file::k_scale: return {n};
    case array_file::weights: return {m, h};
    case array_file::ks:
    case array_file::ke: return {m};
    case array_file::reference: return {m, n};
  }
  return {};
}

}  // namespace mqa::bundle
