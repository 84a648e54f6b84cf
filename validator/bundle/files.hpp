// The files of a bundle and the shape each one has for a given case: one table shared by the
// writer and the reader, so the two cannot disagree. A prefill case's bundle holds k and k_scale;
// a paged case's holds the cache, its block table and the context lengths instead; an
// e2m1fn operand adds its block scales, q_sf or k_sf.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "validator/inputs/inputs.hpp"

namespace mqa::bundle {

inline constexpr std::string_view kCaseFile = "case.toml";
inline constexpr std::string_view kDigestFile = "digest.json";  // digest.hpp

enum class array_file : std::uint8_t {
  q, k, k_scale, weights, ks, ke, reference, kv_cache, block_table, context_lens, q_sf, k_sf
};

// Which cases carry a file.
enum class carried_by : std::uint8_t { every_case, prefill, paged, e2m1fn_q, e2m1fn_k };

struct array_file_info {
  array_file id;
  std::string_view file;
  std::string_view typestring;  // numpy's, as io::npy_header holds it
  carried_by cases;
};

// q_sf and k_sf exist only for e2m1fn operands (k_sf in prefill cases: a paged fp4
// cache holds its keys' scales in its pages): their ue8m0 block scales, one byte per 32 elements, in the byte order of DeepGEMM's packed int32 (`.view(np.int32)`
// packs four).
inline constexpr std::array<array_file_info, 12> kArrayFiles{{
    {array_file::q, "q.npy", "|u1", carried_by::every_case},
    {array_file::k, "k.npy", "|u1", carried_by::prefill},
    {array_file::k_scale, "k_scale.npy", "<f4", carried_by::prefill},
    {array_file::weights, "weights.npy", "<f4", carried_by::every_case},
    {array_file::ks, "ks.npy", "<i4", carried_by::every_case},
    {array_file::ke, "ke.npy", "<i4", carried_by::every_case},
    {array_file::reference, "reference.npy", "<f4", carried_by::every_case},
    {array_file::kv_cache, "kv_cache.npy", "|u1", carried_by::paged},
    {array_file::block_table, "block_table.npy", "<i4", carried_by::paged},
    {array_file::context_lens, "context_lens.npy", "<i4", carried_by::paged},
    {array_file::q_sf, "q_sf.npy", "|u1", carried_by::e2m1fn_q},
    {array_file::k_sf, "k_sf.npy", "|u1", carried_by::e2m1fn_k},
}};

inline const array_file_info& info_of(array_file f) { return kArrayFiles[static_cast<std::size_t>(f)]; }

// e2m1fn codes are stored two per byte (the element at the even index in the low nibble), as
// DeepGEMM's per_token_cast_to_fp4 and torch's float4_e2m1fn_x2 lay them out.
inline bool packed(fp8::format f) { return fp8::traits(f).bits == 4; }

// Whether a case's bundle (paged or not; its q and k formats) carries the file.
inline bool carries(array_file f, const inputs::tensors& t) {
  const bool paged = t.paged.has_value();
  switch (info_of(f).cases) {
    case carried_by::every_case: return true;
    case carried_by::prefill: return !paged;
    case carried_by::paged: return paged;
    case carried_by::e2m1fn_q: return packed(t.q_format);
    case carried_by::e2m1fn_k: return !paged && packed(t.k_format);
  }
  return false;
}

// The shape of the file for tensors of the case (t.paged set for a paged case).
inline std::vector<std::size_t> shape_of(array_file f, const inputs::tensors& t) {
  const auto m = static_cast<std::size_t>(t.m), n = static_cast<std::size_t>(t.n);
  const auto h = static_cast<std::size_t>(t.heads), d = static_cast<std::size_t>(t.head_dim);
  const auto size = [](std::int64_t v) { return static_cast<std::size_t>(v); };
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
    case array_file::kv_cache: return {size(t.paged->num_blocks), size(t.paged->page_bytes)};
    case array_file::block_table: return {size(t.paged->batch), size(t.paged->max_blocks)};
    case array_file::context_lens:
      if (t.paged->context_lens_2d) return {size(t.paged->batch), size(t.paged->next_n)};
      return {size(t.paged->batch)};
  }
  return {};
}

}  // namespace mqa::bundle
