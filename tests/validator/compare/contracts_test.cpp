// Declarations that only exist because kernels compute that way: k_scale folded into bf16 keys
// before the dot (a torch fallback that dequantizes k into bfloat16, then a bf16 einsum), and weights
// rounded to bf16 or fp16. Each kernel below is written as plain float loops in its own order and
// must pass under its declaration and fail under the nearest one that does not describe it.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <set>

#include "reference/fp8/convert.hpp"
#include "validator/compare/comparator.hpp"

using namespace mqa;

namespace {

float to_bf16(float x) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  return std::bit_cast<float>((b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u);
}

std::set<std::string> classes_under(const exact::problem& p, const exact::result& ref, std::vector<float>& out,
                                    kernels::contract c) {
  compare::subject in;
  in.problem = &p;
  in.reference = &ref;
  in.output = {out.data(), p.m, p.n, p.n};
  in.contract = c;
  std::set<std::string> found;
  for (const auto& f : compare::judge(in).findings) found.insert(std::string(compare::to_string(f.kind)));
  return found;
}

}  // namespace

TEST_CASE("k_scale rounded into bf16 keys before a bf16 dot is declarable, and only as such", "[compare][contracts]") {
  // Every product rounds up by the same relative 2^-8 (k * s = 1 + 2^-8 + 2^-20 becomes 1 + 2^-7)
  // and the bf16 dot rounds up once more: beyond a plain bf16 dot's bound, within into-keys-bf16's.
  const std::int64_t d = 127;
  const fp8::conversion e4m3{fp8::format::e4m3fn, fp8::profile_id::ml_dtypes, std::nullopt};
  std::vector<std::uint8_t> q(d, fp8::encode(e4m3, 1.0)), k(d, fp8::encode(e4m3, 1.0));
  std::vector<float> k_scale{1.0f + 0x1p-8f + 0x1p-20f}, weights{1.0f};
  std::vector<std::int32_t> ks{0}, ke{1};
  const exact::problem p{1, 1, 1, d, fp8::format::e4m3fn, fp8::format::e4m3fn, q, k, k_scale, weights, ks, ke};
  const exact::result ref = exact::compute(p);
  const float key = to_bf16(1.0f * k_scale[0]);
  REQUIRE(key == 1.0f + 0x1p-7f);
  float dot = 0;
  for (std::int64_t i = 0; i < d; ++i) dot += 1.0f * key;
  std::vector<float> out{weights[0] * std::max(to_bf16(dot), 0.0f)};
  kernels::contract bf16;
  bf16.dot = bounds::dot_accumulator::bf16;
  CHECK(classes_under(p, ref, out, bf16) == std::set<std::string>{"error-bound"});
  kernels::contract into_keys = bf16;
  into_keys.scale = bounds::scale_placement::into_keys_bf16;
  CHECK(classes_under(p, ref, out, into_keys).empty());
}

TEST_CASE("weights rounded to bf16 or fp16 are declarable, tiny fp16 weights included", "[compare][contracts]") {
  const std::int64_t h = 16, d = 8;
  const fp8::conversion e4m3{fp8::format::e4m3fn, fp8::profile_id::ml_dtypes, std::nullopt};
  std::vector<std::uint8_t> q, k;
  for (std::int64_t x = 0; x < h * d; ++x) q.push_back(fp8::encode(e4m3, 0.5 + 0.25 * static_cast<double>(x % 5)));
  for (std::int64_t x = 0; x < 3 * d; ++x) k.push_back(fp8::encode(e4m3, 1.0 + 0.125 * static_cast<double>(x % 3)));
  std::vector<float> k_scale{1.0f, 0.75f, 1.25f}, weights;
  for (std::int64_t x = 0; x < h; ++x)  // half of them below fp16's normal range (2^-14): they flush to its grid
    weights.push_back((x % 2 ? 1.0f : -1.0f) * (x < h / 2 ? 0.3f + 0.01f * static_cast<float>(x) : 1.7e-7f * static_cast<float>(x)));
  std::vector<std::int32_t> ks{0}, ke{3};
  const exact::problem p{1, 3, h, d, fp8::format::e4m3fn, fp8::format::e4m3fn, q, k, k_scale, weights, ks, ke};
  const exact::result ref = exact::compute(p);
  for (const auto precision : {bounds::weight_precision::bf16, bounds::weight_precision::fp16}) {
    CAPTURE(bounds::to_string(precision));
    std::vector<float> out(3);
    for (std::int64_t j = 0; j < 3; ++j) {
      float sum = 0;
      for (std::int64_t head = 0; head < h; ++head) {
        float dot = 0;
        for (std::int64_t i = 0; i < d; ++i)
          dot += static_cast<float>(fp8::decode(fp8::format::e4m3fn, q[static_cast<std::size_t>(head * d + i)])) *
                 static_cast<float>(fp8::decode(fp8::format::e4m3fn, k[static_cast<std::size_t>(j * d + i)]));
        const float w = weights[static_cast<std::size_t>(head)];
        // bf16: round the float32 bits; fp16: through the compiler's _Float16 (round to nearest even).
        const float rounded = precision == bounds::weight_precision::bf16 ? to_bf16(w) : static_cast<float>(static_cast<_Float16>(w));
        sum += rounded * std::max(dot, 0.0f);
      }
      out[static_cast<std::size_t>(j)] = k_scale[static_cast<std::size_t>(j)] * sum;
    }
    kernels::contract fp32;
    CHECK(classes_under(p, ref, out, fp32) == std::set<std::string>{"error-bound"});
    kernels::contract declared;
    declared.weights = precision;
    CHECK(classes_under(p, ref, out, declared).empty());
  }
}
