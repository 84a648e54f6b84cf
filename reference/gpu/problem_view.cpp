#include "reference/gpu/problem_view.hpp"

#include <stdexcept>
#include <string>

namespace mqa::gpu {
namespace {

void expect_size(const char* name, std::size_t actual, std::int64_t expected) {
  if (expected < 0 || actual != static_cast<std::size_t>(expected))
    throw std::invalid_argument(std::string("GPU problem: ") + name + " has " + std::to_string(actual) +
                                " elements, expected " + std::to_string(expected));
}

}  // namespace

code_format to_code_format(fp8::format f) {
  const fp8::format_traits& t = fp8::traits(f);
  if (!t.is_signed || !t.has_zero || t.bits != 8)
    throw std::invalid_argument(std::string("GPU kernels decode signed 8-bit formats with subnormals; ") +
                                std::string(t.name) + " is not one");
  code_format c;
  c.mantissa_bits = t.mantissa_bits;
  c.bias = t.bias;
  switch (t.nan) {
    case fp8::nan_encoding::ones: c.nan = nan_rule::all_ones; break;
    case fp8::nan_encoding::ieee: c.nan = nan_rule::ieee; break;
    case fp8::nan_encoding::negative_zero: c.nan = nan_rule::negative_zero; break;
    case fp8::nan_encoding::all_ones_byte:
      throw std::invalid_argument("GPU kernels do not decode unsigned fp8 formats");
    case fp8::nan_encoding::none:
      throw std::invalid_argument("GPU kernels do not decode formats without NaN (e2m1fn)");
  }
  return c;
}

host_problem view_of(const exact::problem& p) {
  if (p.m < 0 || p.n < 0 || p.heads < 0 || p.head_dim < 0)
    throw std::invalid_argument("GPU problem: negative size");
  expect_size("q", p.q.size(), p.m * p.heads * p.head_dim);
  expect_size("k", p.k.size(), p.n * p.head_dim);
  expect_size("k_scale", p.k_scale.size(), p.n);
  expect_size("weights", p.weights.size(), p.m * p.heads);
  expect_size("ks", p.ks.size(), p.m);
  expect_size("ke", p.ke.size(), p.m);
  host_problem h;
  h.q = p.q.data();
  h.k = p.k.data();
  h.k_scale = p.k_scale.data();
  h.weights = p.weights.data();
  h.ks = p.ks.data();
  h.ke = p.ke.data();
  h.m = p.m;
  h.n = p.n;
  h.heads = p.heads;
  h.head_dim = p.head_dim;
  h.q_format = to_code_format(p.q_format);
  h.k_format = to_code_format(p.k_format);
  return h;
}

host_paged_problem view_of(const paged::problem& p) {
  paged::check_problem(p);
  host_paged_problem h;
  h.q = p.q.data();
  h.weights = p.weights.data();
  h.kv_cache = p.kv_cache.data();
  h.block_table = p.block_table.data();
  h.context_lens = p.context_lens.data();
  h.batch = p.batch;
  h.next_n = p.next_n;
  h.heads = p.heads;
  h.head_dim = p.head_dim;
  h.block_kv = p.block_kv;
  h.num_blocks = p.num_blocks;
  h.page_bytes = p.page_bytes;
  h.max_blocks = p.max_blocks;
  h.max_context = p.max_context;
  h.context_lens_2d = p.context_lens_2d;
  h.q_format = to_code_format(p.q_format);
  h.k_format = to_code_format(p.k_format);
  return h;
}

}  // namespace mqa::gpu
