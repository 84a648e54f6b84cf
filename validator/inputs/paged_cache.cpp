#include "paged_cache.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstdlib>

#include "distributions.hpp"
#include "quantize.hpp"
#include "reference/paged/problem.hpp"
#include "validator/rng/rng.hpp"
#include "specials.hpp"
#include "validator/input_error.hpp"
#include "validator/pieces.hpp"

namespace mqa::inputs {
namespace {

// About two million values per piece: large enough to keep every core busy for a while, small
// enough that a piece's floats stay in a few MiB.
constexpr std::int64_t kKeysPerPiece = 16384;

// A power-of-two block scale as its ue8m0 byte, held to 2^-20 .. 2^20 as inputs.cpp holds a prefill one.
std::uint8_t ue8m0_byte_of(const cases::case_spec& c, float scale) {
  const int e = static_cast<int>(std::bit_cast<std::uint32_t>(scale) >> 23) - exact::kBlockScaleBias;
  if (std::abs(e) > exact::kBlockScaleMaxExponent)
    throw input_error(fmt::format("case '{}': k's e2m1fn block scales reach 2^{} (from its values and bound); "
                                  "accepted: 2^-{} .. 2^{}, where every block-scaled product is a normal float32 "
                                  "(choose a bound nearer the values' magnitude)",
                                  c.name, e, exact::kBlockScaleMaxExponent, exact::kBlockScaleMaxExponent));
  return static_cast<std::uint8_t>(e + exact::kBlockScaleBias);
}

void write_scale(std::uint8_t* at, float scale) {
  const auto bits = std::bit_cast<std::uint32_t>(scale);
  for (int byte = 0; byte < 4; ++byte) at[byte] = static_cast<std::uint8_t>(bits >> (8 * byte));  // little-endian
}

// Blocks [first, last): their keys as a prefill k of num_blocks * block_kv keys would hold them.
// An e2m1fn cache holds each key's codes two per byte and its ue8m0 block scales (one
// per 32 elements, quantized per block as the prefill keys are) where an fp8 cache holds a float32.
void fill_blocks(const cases::case_spec& c, paged_cache& cache, std::int64_t first, std::int64_t last) {
  const std::int64_t dim = c.head_dim, block_kv = cache.block_kv;
  const bool fp4 = exact::uses_block_scales(c.k_format);
  const std::int64_t scaled = fp4 ? exact::kBlockSize : dim;  // elements per scale
  const paged::key_bytes bytes = paged::key_bytes_of(c.k_format, dim);
  const auto slots = static_cast<std::size_t>(cache.num_blocks * block_kv);
  const auto key0 = static_cast<std::size_t>(first * block_kv), keys = static_cast<std::size_t>((last - first) * block_kv);
  const auto d = static_cast<std::size_t>(dim);
  std::vector<float> values(keys * d);
  fill(c.values, true, counter_rng(c.seed, stream::k_values), values, dim, key0 * d);
  std::vector<float> scales = token_scales(values, scaled, c.k_bound(), c.k_scale);
  divide_by_scales(values, scaled, scales);
  plant_value_specials(c, tensor::k, values, slots * d, key0 * d);
  std::vector<std::uint8_t> codes(values.size());
  fp8::encode(c.k_conversion(), std::span<const float>(values), codes);
  if (!fp4) plant_scale_specials(c, scales, slots, key0);  // an fp4 key has no float32 scale (validate.cpp)

  const counter_rng padding(c.seed, stream::paged_padding);
  const std::int64_t payload = block_kv * (bytes.codes + bytes.scale);
  const std::int64_t padding_words = (cache.page_bytes - payload + 7) / 8;
  for (std::int64_t block = first; block < last; ++block) {
    std::uint8_t* page = cache.kv_cache.data() + block * cache.page_bytes;
    const std::size_t local = static_cast<std::size_t>((block - first) * block_kv);
    for (std::int64_t slot = 0; slot < block_kv; ++slot) {
      const std::size_t key = local + static_cast<std::size_t>(slot);
      const std::uint8_t* from = codes.data() + key * d;
      std::uint8_t* to = page + slot * bytes.codes;
      if (fp4) {
        for (std::int64_t x = 0; x < bytes.codes; ++x)
          to[x] = static_cast<std::uint8_t>((from[2 * x] & 0x0F) | (from[2 * x + 1] & 0x0F) << 4);
        for (std::int64_t b = 0; b < bytes.scale; ++b)
          page[block_kv * bytes.codes + slot * bytes.scale + b] =
              ue8m0_byte_of(c, scales[key * static_cast<std::size_t>(bytes.scale) + static_cast<std::size_t>(b)]);
      } else {
        std::copy_n(from, dim, to);
        write_scale(page + block_kv * bytes.codes + 4 * slot, scales[key]);
      }
    }
    // Bytes past the payload: whatever a real allocation holds there, never zeros a bug could hide in.
    for (std::int64_t w = 0; w < padding_words; ++w) {
      const std::uint64_t bits = padding.bits(static_cast<std::uint64_t>(block * padding_words + w));
      for (std::int64_t byte = 0; byte < 8 && payload + 8 * w + byte < cache.page_bytes; ++byte)
        page[payload + 8 * w + byte] = static_cast<std::uint8_t>(bits >> (8 * byte));
    }
  }
}

}  // namespace

void fill_paged_cache(const cases::case_spec& c, paged_cache& cache) {
  cache.kv_cache.assign(static_cast<std::size_t>(cache.num_blocks * cache.page_bytes), 0);
  const std::int64_t per_piece = std::max<std::int64_t>(1, kKeysPerPiece / cache.block_kv);
  const std::int64_t pieces = (cache.num_blocks + per_piece - 1) / per_piece;
  for_each_piece(pieces, [&](std::int64_t piece) {
    fill_blocks(c, cache, piece * per_piece, std::min(cache.num_blocks, (piece + 1) * per_piece));
  });
}

}  // namespace mqa::inputs
