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
inline constexpr std::string_view kDigestFile = "digest.json";  // digest.hpp

enum class array_file : std::uint8_t { q, k, k_scale, weights, ks, ke, reference };

struct array_file_info {
  array_file id;
  std::string_view file;
  std::string_view typestring;  // numpy's, as io::npy_header holds it
};

inline constexpr std::array<array_file_info, 7> kArrayFiles{{
    {array_file::q, "q.npy", "|u1"},
    {array_file::k, "k.npy", "|u1"},
    {array_file::k_scale, "k_scale.npy", "<f4"},
    {array_file::weights, "weights.npy", "<f4"},
    {array_file::ks, "ks.npy", "<i4"},
    {array_file::ke, "ke.npy", "<i4"},
    {array_file::reference, "reference.npy", "<f4"},
}};

inline std::vector<std::size_t> shape_of(array_file f, const inputs::tensors& t) {
  const auto m = static_cast<std::size_t>(t.m), n = static_cast<std::size_t>(t.n);
  const auto h = static_cast<std::size_t>(t.heads), d = static_cast<std::size_t>(t.head_dim);
  switch (f) {
    case array_file::q: return {m, h, d};
    case array_file::k: return {n, d};
    case array_file::k_scale: return {n};
    case array_file::weights: return {m, h};
    case array_file::ks:
    case array_file::ke: return {m};
    case array_file::reference: return {m, n};
  }
  return {};
}

}  // namespace mqa::bundle
