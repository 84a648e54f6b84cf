// The case model: one [[case]] of a suite, every key resolved (defaults applied), checked for
// consistency before anything runs. cases/README.md documents the TOML schema; this header is
// the same schema as C++ and is what every later stage (layouts, inputs, bundles) reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "reference/fp8/convert.hpp"
#include "reference/names/names.hpp"

namespace mqa::cases {

// How a per-token scale is kept: the float32 amax / bound, or that rounded up to a power of two
// (DeepSeek/DeepGEMM's ue8m0 scale factors).
enum class scale_kind : std::uint8_t { fp32, ue8m0 };

// The real values q and k are drawn from before quantization (inputs/distributions.hpp).
enum class distribution : std::uint8_t { normal, uniform, outliers, near_ties };

// Values planted on request after scaling, before encoding, so the profile decides their codes.
enum class special_value : std::uint8_t {
  subnormal,           // a subnormal code of the format
  largest,             // +-the largest finite value (or the clamp bound)
  negative_underflow,  // a negative value below half the smallest subnormal: -0 = 0x80 in OCP formats
  nan,                 // a NaN input: the profile picks the code
  zero_k_scale,        // k_scale[j] = 0 (docs/contracts.md: only where a case asks)
  negative_k_scale,    // k_scale[j] < 0: relu(s x) != s relu(x)
};

// Which data tensors the value specials go to (k_scale specials always go to k_scale).
enum class special_target : std::uint8_t { q, k, both };

enum class layout_kind : std::uint8_t { causal, packed, context_parallel, sliding, compressed, random, explicit_windows, paged };

// paged: how the block table maps each request's logical blocks to physical ones.
enum class paged_fill : std::uint8_t {
  shuffled,       // a shuffled pool handed out request by request (DeepGEMM's test: randperm)
  shared_prefix,  // every request's first shared_blocks blocks are the same physical ones (prefix caching)
  sequential,     // blocks handed out in order: request 0's logical blocks are its physical ones
};

// paged: what the table holds past a request's last used block (never read by a correct kernel).
enum class unused_entry : std::uint8_t { zero, minus_one, stale };

struct layout_spec {
  layout_kind kind = layout_kind::causal;
  // Windows past [0, n) or with ks > ke: allowed in `explicit`, planted in a quarter of the rows
  // by every other layout. Never present unless a case sets it.
  bool out_of_range = false;

  std::int64_t window = 0;  // sliding: keys per row
  // packed: either `requests` (lengths split by the seed) or the two length lists (context_lengths
  // also lists a paged case's).
  std::int64_t requests = 0;
  std::vector<std::int64_t> query_lengths, context_lengths;
  std::optional<std::int64_t> cp_rank;  // context-parallel; default (n / m) / 3 as DeepGEMM's test
  std::int64_t ratio = 0, start = 0, first_position = 0;  // compressed
  double empty_fraction = 0.25;                            // random
  std::vector<std::int64_t> ks, ke;                        // explicit

  // paged: m = batch x next_n query rows, n = the output's columns (max_context), keys
  // in a paged cache. Defaults that depend on other keys (max_blocks, num_blocks, page_bytes) are
  // resolved when the case is read, so a resolved case writes them.
  std::int64_t next_n = 1;
  std::int64_t block_kv = 64;
  // context_lengths (above) lists one per request; empty: drawn from [context_min, context_max].
  std::int64_t context_min = 0;
  std::optional<std::int64_t> context_max;    // unset: n
  bool context_lens_2d = false;               // [batch, next_n]: earlier rows drawn in [0, the request's length]
  std::optional<std::int64_t> max_blocks, num_blocks, page_bytes;
  paged_fill fill = paged_fill::shuffled;
  std::int64_t shared_blocks = 1;             // shared-prefix
  unused_entry unused_entries = unused_entry::zero;
  std::vector<std::vector<std::int64_t>> block_table;  // explicit [batch][max_blocks]; empty: made by `fill`
};

struct case_spec {
  std::string name;
  std::string description;  // free text, kept in the resolved case
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  fp8::format q_format = fp8::format::e4m3fn;
  fp8::format k_format = fp8::format::e4m3fn;
  scale_kind q_scale = scale_kind::fp32;
  scale_kind k_scale = scale_kind::fp32;
  fp8::profile_id profile = fp8::profile_id::ml_dtypes;
  // Saturation bound: when set, the per-token scale is amax / bound and values are clamped to
  // +-bound before encoding (vLLM); when unset, amax / format max and no clamp (DeepGEMM).
  std::optional<double> bound;
  distribution values = distribution::normal;
  std::vector<special_value> specials;
  std::int64_t special_count = 2;  // planted elements per special value and tensor
  special_target special_in = special_target::both;
  std::uint64_t seed = 0;
  layout_spec layout;
  bool clean_logits = true;
  std::optional<std::int64_t> topk;  // unset: min(2048, longest window), see layout::default_topk
  // Where a case that no generator rebuilds came from ("shrunk from case 'c' of suite 's' ..."):
  // `mqacheck shrink` cuts a bundle's arrays down, and the arrays are then the inputs themselves.
  // Empty for every generated case; a case with an origin is only ever read with its bundle.
  std::string origin;

  fp8::conversion q_conversion() const { return {q_format, profile, bound}; }
  fp8::conversion k_conversion() const { return {k_format, profile, bound}; }
  // The divisor of the per-token scale: the bound, or the format's largest finite value.
  double q_bound() const { return bound ? *bound : fp8::max_finite(q_format); }
  double k_bound() const { return bound ? *bound : fp8::max_finite(k_format); }
};

// DeepGEMM's generate_cp_test_data takes "an arbitrary rank": cp_size / 3, with cp_size = n / m.
constexpr std::int64_t default_cp_rank(std::int64_t m, std::int64_t n) { return (n / m) / 3; }

struct suite {
  std::string name;
  std::filesystem::path file;
  std::vector<std::string> variants;  // [suite] variants: what `mqacheck run` selects by default
  std::vector<case_spec> cases;
};

// Names as the TOML files spell them, one table per enum, read both ways by reference/names/names.hpp
// (names::parse, and names::accepted for the "accepted:" part of messages; field::choice takes a
// table). to_string(v) is its table's name for v (names.cpp).
inline constexpr names::table<scale_kind, 2> kScaleKindNames{{{scale_kind::fp32, "fp32"}, {scale_kind::ue8m0, "ue8m0"}}};
inline constexpr names::table<distribution, 4> kDistributionNames{{
    {distribution::normal, "normal"},
    {distribution::uniform, "uniform"},
    {distribution::outliers, "outliers"},
    {distribution::near_ties, "near-ties"},
}};
inline constexpr names::table<special_value, 6> kSpecialValueNames{{
    {special_value::subnormal, "subnormal"},
    {special_value::largest, "largest"},
    {special_value::negative_underflow, "negative-underflow"},
    {special_value::nan, "nan"},
    {special_value::zero_k_scale, "zero-k-scale"},
    {special_value::negative_k_scale, "negative-k-scale"},
}};
inline constexpr names::table<special_target, 3> kSpecialTargetNames{
    {{special_target::q, "q"}, {special_target::k, "k"}, {special_target::both, "both"}}};
inline constexpr names::table<layout_kind, 8> kLayoutKindNames{{
    {layout_kind::causal, "causal"},
    {layout_kind::packed, "packed"},
    {layout_kind::context_parallel, "context-parallel"},
    {layout_kind::sliding, "sliding"},
    {layout_kind::compressed, "compressed"},
    {layout_kind::random, "random"},
    {layout_kind::explicit_windows, "explicit"},
    {layout_kind::paged, "paged"},
}};
inline constexpr names::table<paged_fill, 3> kPagedFillNames{{
    {paged_fill::shuffled, "shuffled"},
    {paged_fill::shared_prefix, "shared-prefix"},
    {paged_fill::sequential, "sequential"},
}};
inline constexpr names::table<unused_entry, 3> kUnusedEntryNames{
    {{unused_entry::zero, "zero"}, {unused_entry::minus_one, "minus-one"}, {unused_entry::stale, "stale"}}};

std::string_view to_string(scale_kind v);
std::string_view to_string(distribution v);
std::string_view to_string(special_value v);
std::string_view to_string(special_target v);
std::string_view to_string(layout_kind v);
std::string_view to_string(paged_fill v);
std::string_view to_string(unused_entry v);

bool is_k_scale_special(special_value v);

}  // namespace mqa::cases
