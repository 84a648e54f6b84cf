#include "references.hpp"

#include <algorithm>
#include <chrono>

#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "validator/cut/cut.hpp"
#include "validator/diagnose/paged_sample.hpp"
#include "validator/input_error.hpp"
#include "validator/judge/judge.hpp"

namespace mqa::judge {
namespace {

bool bf16_logits(const kernels::contract& c) { return c.logits == bounds::logits_precision::bf16; }

}  // namespace

exact::options reference_options(const kernels::contract& c, unsigned threads) {
  exact::options o;
  o.relu = c.relu;
  o.threads = threads;
  o.bf16_logits = bf16_logits(c);
  return o;
}

exact::options centre_options(const kernels::contract& c, unsigned threads) {
  exact::options o = reference_options(c, threads);
  o.dot_model = bounds::traits(c.dot).model;
  o.promote_every = c.promote_every;
  return o;
}

std::vector<std::int64_t> centre_rows(const exact::problem& p, const paged::problem* paged,
                                      const std::vector<std::int64_t>& rows, const kernels::contract& c,
                                      const engines& e) {
  if (bounds::traits(c.dot).model != nullptr) {
    const exact::options o = centre_options(c);
    if (paged ? e.paged_on_device && e.paged_on_device(*paged, o) : e.on_device && e.on_device(p, o)) return rows;
  }
  // The model runs on the CPU: past about 2^34 multiply-adds (seconds on a few cores) it is
  // computed for sampled rows (first, last, window edges, then random ones), which are judged.
  const double work = static_cast<double>(p.n) * static_cast<double>(p.heads) * static_cast<double>(p.head_dim);
  const auto budget = static_cast<std::size_t>(std::max(16.0, 0x1p34 / std::max(work, 1.0)));
  if (rows.size() <= budget) return rows;
  std::vector<std::int64_t> sampled;
  for (const auto i : exact::sample_rows(p, budget, 0x5A3D1E5ull))
    if (std::binary_search(rows.begin(), rows.end(), i)) sampled.push_back(i);
  return sampled;
}

std::optional<exact::result> centre_on(const kernels::contract& c, const exact::problem& p, const paged::problem* paged,
                                       std::vector<std::int64_t> rows, unsigned threads, const engines& e) {
  const mma::instruction* model = bounds::traits(c.dot).model;
  if (model == nullptr) return std::nullopt;
  if (const auto why = mma::why_unusable(*model, p.q_format, p.k_format, p.head_dim, c.promote_every))
    throw input_error(*why);
  exact::options o = centre_options(c, threads);
  o.rows = std::move(rows);
  // A GPU engine computes the model there (reference/exact/gpu/centre_kernel.hip), its sampled
  // elements cross-checked against the CPU's model on every call.
  return operation::exact_logits(p, paged, o, e);
}

std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const paged::problem* paged, const exact::result& reference,
                                        unsigned threads, const engines& e) {
  return centre_on(c, p, paged, centre_rows(p, paged, reference.rows, c, e), threads, e);
}

float centre_at(const kernels::contract& c, const exact::problem& p, const paged::problem* paged, std::int64_t i,
                std::int64_t j) {
  // An element's value reads its row's q and weights and its key alone: the problem cut to them
  // has it as its one element (a paged problem's request read through its block table).
  cut::selection at = cut::selection::everything(p);
  at.rows = {i};
  at.keys = {j};
  const diagnose::judged_problem one =
      paged ? diagnose::sampled_requests(*paged, at, {}) : diagnose::judged_problem::dense(cut::cut_problem(p, at));
  exact::options o = bounds::is_modelled(c.dot) ? centre_options(c, 1) : reference_options(c, 1);
  return one.compute(o).logits.at(0);
}

reference_cache::reference_cache(const exact::problem& p, const paged::problem* paged, engines e, unsigned threads)
    : p_(p), paged_(paged), engines_(std::move(e)), threads_(threads) {}

const exact::result& reference_cache::reference(const kernels::contract& c) {
  const auto key = std::tuple{c.relu, bf16_logits(c)};
  auto it = references_.find(key);
  if (it == references_.end()) {
    const auto start = std::chrono::steady_clock::now();
    it = references_.emplace(key, operation::exact_logits(p_, paged_, reference_options(c, threads_), engines_)).first;
    reference_seconds_ += seconds_since(start);
  }
  return it->second;
}

const exact::result& reference_cache::keeps_nan(const kernels::contract& c) {
  kernels::contract keeps = c;
  keeps.relu = exact::relu_rule::keeps_nan;
  return reference(keeps);
}

const exact::result* reference_cache::centre(const kernels::contract& c) {
  if (!bounds::is_modelled(c.dot)) return nullptr;
  const auto key = std::tuple{c.relu, c.dot, c.promote_every, bf16_logits(c)};
  auto it = centres_.find(key);
  if (it == centres_.end()) {
    const exact::result& judged = reference(c);
    const auto start = std::chrono::steady_clock::now();
    it = centres_.emplace(key, *centre_for(c, p_, paged_, judged, threads_, engines_)).first;
    const double seconds = seconds_since(start);
    reference_seconds_ += seconds;
    centre_seconds_ += seconds;
  }
  return &it->second;
}

}  // namespace mqa::judge
