#include "shrunk_bundle.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace mqa::shrink {

std::string ranges(const std::vector<std::int64_t>& indices, std::size_t limit) {
  std::string out;
  for (std::size_t x = 0; x < indices.size();) {
    std::size_t last = x;
    while (last + 1 < indices.size() && indices[last + 1] == indices[last] + 1) ++last;
    const std::string part =
        last == x ? fmt::format("{}", indices[x]) : fmt::format("{}-{}", indices[x], indices[last]);
    if (out.size() + part.size() + 2 > limit) return out + ", ...";
    out += (out.empty() ? "" : ", ") + part;
    x = last + 1;
  }
  return out;
}

bundle::bundle shrunk_bundle(const bundle::bundle& original, const cut::selection& kept, const cut::problem& cut,
                             unsigned threads) {
  const cases::case_spec& from = original.spec;
  bundle::bundle b;
  b.suite_name = original.suite_name;
  b.spec = from;
  cases::case_spec& c = b.spec;
  const inputs::tensors& t = cut.arrays;
  c.m = t.m, c.n = t.n, c.heads = t.heads, c.head_dim = t.head_dim;
  c.layout = cases::layout_spec{};
  c.layout.kind = cases::layout_kind::explicit_windows;
  c.layout.out_of_range = from.layout.out_of_range;
  c.layout.ks.assign(t.ks.begin(), t.ks.end());
  c.layout.ke.assign(t.ke.begin(), t.ke.end());
  if (c.topk) c.topk = std::min(*c.topk, c.n);
  c.origin = from.origin.empty()
                 ? fmt::format("shrunk from case '{}' of suite '{}' (m = {}, n = {}, heads = {}, head_dim = {})", from.name,
                               original.suite_name, from.m, from.n, from.heads, from.head_dim)
                 : from.origin;
  c.description = fmt::format("kept rows [{}], keys [{}], heads [{}], head_dim elements [{}]{}", ranges(kept.rows),
                              ranges(kept.keys), ranges(kept.heads), ranges(kept.dims),
                              from.origin.empty() ? "" : " of an already shrunk case");
  b.inputs = t;
  exact::options o;
  o.threads = threads;
  b.reference = exact::compute(cut.view(), o).logits;
  return b;
}

}  // namespace mqa::shrink
