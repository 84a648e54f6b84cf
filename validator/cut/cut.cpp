#include "cut.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace mqa::cut {
namespace {

std::vector<std::int64_t> iota(std::int64_t count) { return consecutive(0, count); }

void check(const std::vector<std::int64_t>& indices, std::int64_t extent, const char* what) {
  for (std::size_t x = 0; x < indices.size(); ++x)
    if (indices[x] < 0 || indices[x] >= extent || (x > 0 && indices[x] <= indices[x - 1]))
      throw std::invalid_argument(std::string("cut: the ") + what + " kept must be ascending, distinct and in range");
}

std::size_t at(std::int64_t x) { return static_cast<std::size_t>(x); }

}  // namespace

selection selection::everything(const exact::problem& p) {
  return {iota(p.m), iota(p.n), iota(p.heads), iota(p.head_dim)};
}

exact::problem problem::view() const {
  const inputs::tensors& t = arrays;
  return {t.m, t.n, t.heads, t.head_dim, q_format, k_format, t.q, t.k, t.k_scale, t.weights, t.ks, t.ke};
}

std::int32_t remap_bound(std::int32_t v, std::span<const std::int64_t> keys, std::int64_t n) {
  if (v <= 0) return v;
  if (v >= n) return static_cast<std::int32_t>(static_cast<std::int64_t>(keys.size()) + (v - n));
  return static_cast<std::int32_t>(std::lower_bound(keys.begin(), keys.end(), std::int64_t{v}) - keys.begin());
}

std::vector<std::int64_t> consecutive(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(count));
  std::iota(all.begin(), all.end(), first);
  return all;
}

problem cut_problem(const exact::problem& p, const selection& s) {
  check(s.rows, p.m, "rows");
  check(s.keys, p.n, "keys");
  check(s.heads, p.heads, "heads");
  check(s.dims, p.head_dim, "head_dim elements");
  problem out;
  out.q_format = p.q_format;
  out.k_format = p.k_format;
  inputs::tensors& t = out.arrays;
  t.m = std::ssize(s.rows), t.n = std::ssize(s.keys), t.heads = std::ssize(s.heads), t.head_dim = std::ssize(s.dims);
  for (const auto i : s.rows) {
    for (const auto h : s.heads) {
      for (const auto d : s.dims) t.q.push_back(p.q[at((i * p.heads + h) * p.head_dim + d)]);
      t.weights.push_back(p.weights[at(i * p.heads + h)]);
    }
    t.ks.push_back(remap_bound(p.ks[at(i)], s.keys, p.n));
    t.ke.push_back(remap_bound(p.ke[at(i)], s.keys, p.n));
  }
  for (const auto j : s.keys) {
    for (const auto d : s.dims) t.k.push_back(p.k[at(j * p.head_dim + d)]);
    t.k_scale.push_back(p.k_scale[at(j)]);
  }
  return out;
}

std::vector<float> cut_output(const kernels::output_view& out, std::span<const std::int64_t> rows,
                              std::span<const std::int64_t> keys) {
  std::vector<float> values;
  values.reserve(rows.size() * keys.size());
  for (const auto i : rows)
    for (const auto j : keys) values.push_back(out.row(i)[j]);
  return values;
}

exact::result cut_result(const exact::result& r, std::int64_t n, std::span<const std::int64_t> rows,
                         std::span<const std::int64_t> keys) {
  exact::result out;
  out.rows = iota(std::ssize(rows));
  out.logits.reserve(rows.size() * keys.size());
  out.magnitude.reserve(rows.size() * keys.size());
  for (const auto i : rows) {
    const auto found = std::lower_bound(r.rows.begin(), r.rows.end(), i);
    if (found == r.rows.end() || *found != i) throw std::invalid_argument("cut: a row the result does not hold");
    const auto base = static_cast<std::size_t>(found - r.rows.begin()) * static_cast<std::size_t>(n);
    for (const auto j : keys) {
      out.logits.push_back(r.logits[base + at(j)]);
      out.magnitude.push_back(r.magnitude[base + at(j)]);
    }
  }
  return out;
}

}  // namespace mqa::cut
