#include "judged.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace mqa::diagnose {
namespace {

template <class T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// The float32 little-endian, as the cache holds scales (reference/paged/problem.hpp).
void append_scale(std::vector<std::uint8_t>& page, float scale) {
  const auto bits = std::bit_cast<std::uint32_t>(scale);
  for (int byte = 0; byte < 4; ++byte) page.push_back(static_cast<std::uint8_t>(bits >> (8 * byte)));
}

}  // namespace

judged_problem judged_problem::dense(cut::problem p) {
  judged_problem j;
  j.rows_ = std::move(p);
  return j;
}

judged_problem judged_problem::by_request(std::vector<cut::problem> requests) {
  judged_problem j;
  if (requests.empty()) throw std::invalid_argument("diagnose: a paged sample without rows");
  const cut::problem& first = requests.front();
  inputs::tensors& rows = j.rows_.arrays;
  rows.n = first.arrays.n, rows.heads = first.arrays.heads, rows.head_dim = first.arrays.head_dim;
  j.rows_.q_format = first.q_format;
  j.rows_.k_format = first.k_format;
  const std::int64_t keys = rows.n, dim = rows.head_dim;
  const std::int64_t slots = std::max<std::int64_t>(keys, 1);  // a page holds at least one key
  for (const cut::problem& r : requests) {
    const inputs::tensors& t = r.arrays;
    if (t.n != keys || t.heads != rows.heads || t.head_dim != dim || r.q_format != first.q_format ||
        r.k_format != first.k_format)
      throw std::invalid_argument("diagnose: a paged sample's requests differ in keys, heads, dims or formats");
    rows.m += t.m;
    append(rows.q, t.q);
    append(rows.weights, t.weights);
    append(rows.ks, t.ks);
    append(rows.ke, t.ke);
    append(j.codes_, t.k);
    append(j.scales_, t.k_scale);
    for (std::int64_t x = 0; x < t.m; ++x) {
      append(j.cache_, t.k);
      j.cache_.resize(j.cache_.size() + static_cast<std::size_t>((slots - keys) * dim), 0);
      for (const float s : t.k_scale) append_scale(j.cache_, s);
      for (std::int64_t pad = keys; pad < slots; ++pad) append_scale(j.cache_, 0.0f);
    }
  }
  for (std::int64_t r = 0; r < rows.m; ++r) {
    j.table_.push_back(static_cast<std::int32_t>(r));
    j.lens_.push_back(static_cast<std::int32_t>(keys));
  }
  j.requests_ = std::move(requests);
  paged::problem p;
  p.batch = rows.m;
  p.next_n = 1;
  p.heads = rows.heads;
  p.head_dim = dim;
  p.block_kv = slots;
  p.num_blocks = rows.m;
  p.page_bytes = slots * (dim + 4);
  p.max_blocks = 1;
  p.max_context = keys;
  p.q_format = j.rows_.q_format;
  p.k_format = j.rows_.k_format;
  p.q = rows.q;
  p.weights = rows.weights;
  p.kv_cache = j.cache_;
  p.block_table = j.table_;
  p.context_lens = j.lens_;
  j.paged_ = p;
  return j;
}

exact::problem judged_problem::view() const { return rows_.view(); }

const paged::problem* judged_problem::paged() const { return paged_ ? &*paged_ : nullptr; }

exact::result judged_problem::compute(const exact::options& o) const {
  exact::options every = o;
  every.rows.clear();
  if (!paged_) return exact::compute(rows_.view(), every);
  exact::result out;
  for (const cut::problem& r : requests_) {
    const exact::result part = exact::compute(r.view(), every);
    append(out.logits, part.logits);
    append(out.magnitude, part.magnitude);
    out.undecided_by_fast_path += part.undecided_by_fast_path;
  }
  for (std::int64_t i = 0; i < rows_.arrays.m; ++i) out.rows.push_back(i);
  return out;
}

std::span<const std::uint8_t> judged_problem::key_codes() const { return paged_ ? codes_ : rows_.arrays.k; }

std::span<const float> judged_problem::key_scales() const { return paged_ ? scales_ : rows_.arrays.k_scale; }

}  // namespace mqa::diagnose
