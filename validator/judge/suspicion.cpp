#include "suspicion.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "kernels/cpu/registry.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/bounds/arithmetic.hpp"

namespace mqa::judge {
namespace {

// The CPU model run on at most about 2^24 multiply-adds: a witness costs a fraction of the
// reference's own time, whatever the problem's size.
constexpr std::int64_t kWitnessWork = std::int64_t{1} << 24;
constexpr std::int64_t kWitnessKeys = 1024;
// A centre (computed anyway, on every row where the GPU computes it) is read on whole rows of it,
// about 2^21 elements and at least 16 rows: the note's sample stays what a sampled centre gave (32 rows of
// 65536 keys), and a judge that holds the output on a GPU copies only those rows to the host.
constexpr std::int64_t kCentreWitnessElements = std::int64_t{1} << 21;
constexpr std::int64_t kCentreWitnessMinimumRows = 16;

std::size_t index_of(const exact::result& r, std::int64_t row) {
  return static_cast<std::size_t>(std::lower_bound(r.rows.begin(), r.rows.end(), row) - r.rows.begin());
}

// Up to `count` entries of `from`, evenly spaced, in order.
std::vector<std::int64_t> spread(const std::vector<std::int64_t>& from, std::int64_t count) {
  const auto size = static_cast<std::int64_t>(from.size());
  if (size <= count) return from;
  std::vector<std::int64_t> out;
  for (std::int64_t x = 0; x < count; ++x) out.push_back(from[static_cast<std::size_t>(x * size / count)]);
  return out;
}

std::vector<std::int64_t> every(std::int64_t n) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) out[static_cast<std::size_t>(j)] = j;
  return out;
}

// The witness's values on rows x keys: the centre's rows where it is the witness (every key), else
// what a CPU model computed, [rows, keys] dense in `values`.
struct witness {
  std::vector<std::int64_t> rows, keys;
  std::vector<float> values;
  std::vector<const float*> centre_rows;
  const float* row(std::size_t r) const { return centre_rows.empty() ? values.data() + r * keys.size() : centre_rows[r]; }
};

// The first correct model of the contract.
std::optional<kernels::cpu::model_config> model_of(const kernels::contract& c, const exact::problem& p) {
  const std::vector<kernels::cpu::model_config> models = kernels::cpu::models_declaring(c, p);
  if (models.empty()) return std::nullopt;
  return models.front();
}

// Where a CPU model is the witness: the keys it is run on, and its rows (a sample of the judged ones).
std::vector<std::int64_t> model_keys(const exact::problem& p) { return spread(every(p.n), kWitnessKeys); }
std::vector<std::int64_t> model_rows(const exact::problem& p, const std::vector<std::int64_t>& judged) {
  const std::int64_t per_row =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(model_keys(p).size()) * p.heads * p.head_dim);
  return spread(judged, std::max<std::int64_t>(1, kWitnessWork / per_row));
}
std::vector<std::int64_t> model_rows(const compare::subject& s) { return model_rows(*s.problem, s.reference->rows); }

// Where the centre is the witness: a sample of its rows, every key.
std::vector<std::int64_t> centre_witness_rows(const exact::problem& p, const std::vector<std::int64_t>& centred) {
  return spread(centred, std::max(kCentreWitnessMinimumRows, kCentreWitnessElements / std::max<std::int64_t>(1, p.n)));
}

// Whether a witness exists for the contract and problem, references aside (the module's header
// says where there is none); `modelled`: its centre is the witness.
bool witnessed(const compare::subject& s, bool modelled) {
  if (s.contract.dot == bounds::dot_accumulator::exact || s.contract.logits == kernels::logits_precision::bf16)
    return false;
  return modelled || (!s.paged && model_of(s.contract, *s.problem));
}
bool witnessed(const compare::subject& s) { return s.reference && witnessed(s, s.centre != nullptr); }

std::optional<witness> witness_of(const compare::subject& s) {
  const exact::problem& p = *s.problem;
  const bool bf16 = s.contract.logits == kernels::logits_precision::bf16;
  if (s.centre) {
    witness w{centre_witness_rows(p, s.centre->rows), every(p.n), {}, {}};
    const std::vector<float>& centre = bf16 ? s.centre->logits_bf16 : s.centre->logits;
    for (const std::int64_t i : w.rows) w.centre_rows.push_back(centre.data() + index_of(*s.centre, i) * static_cast<std::size_t>(p.n));
    return w;
  }
  if (s.paged) return std::nullopt;
  const auto config = model_of(s.contract, p);
  if (!config) return std::nullopt;
  witness w;
  w.keys = model_keys(p);
  w.rows = model_rows(s);
  w.values.assign(w.rows.size() * w.keys.size(), NAN);
  const kernels::cpu::sampled_output only{w.rows, w.keys, w.values.data()};
  kernels::cpu::run_model(*config, p, {nullptr, p.m, p.n, p.n}, 0, &only);
  return w;
}

// The counts over the witness, the output's row i at output_row(r, i) (r: i's place in w.rows).
template <class OutputRow>
std::optional<compare::suspicion> counts_over(const compare::subject& s, OutputRow output_row) {
  if (!witnessed(s)) return std::nullopt;
  const auto w = witness_of(s);
  if (!w) return std::nullopt;
  const exact::problem& p = *s.problem;
  const bool bf16 = s.contract.logits == kernels::logits_precision::bf16;
  const std::vector<float>& reference = bf16 ? s.reference->logits_bf16 : s.reference->logits;
  compare::suspicion c;
  for (std::size_t r = 0; r < w->rows.size(); ++r) {
    const std::int64_t i = w->rows[r];
    const std::size_t ri = index_of(*s.reference, i);
    if (ri >= s.reference->rows.size() || s.reference->rows[ri] != i) continue;
    const exact::window window = exact::clamped_window(p, i);
    const float* out = output_row(r, i);
    const float* modelled = w->row(r);
    for (std::size_t k = 0; k < w->keys.size(); ++k) {
      const std::int64_t j = w->keys[k];
      if (j < window.begin || j >= window.end) continue;
      const float x = reference[ri * static_cast<std::size_t>(p.n) + static_cast<std::size_t>(j)];
      const float m = modelled[k];
      if (!std::isfinite(x) || !std::isfinite(m) || std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(m))
        continue;
      ++c.differing;
      c.matched += std::bit_cast<std::uint32_t>(out[j]) == std::bit_cast<std::uint32_t>(x);
    }
  }
  return c;
}

}  // namespace

std::vector<std::int64_t> witnessed_rows(const compare::subject& s) {
  if (!witnessed(s)) return {};
  return s.centre ? centre_witness_rows(*s.problem, s.centre->rows) : model_rows(s);
}

std::vector<std::int64_t> witnessed_rows(const compare::subject& s, const std::vector<std::int64_t>& judged) {
  const bool modelled = bounds::is_modelled(s.contract.dot);
  if (!witnessed(s, modelled)) return {};
  return modelled ? centre_witness_rows(*s.problem, judged) : model_rows(*s.problem, judged);
}

std::optional<compare::suspicion> answer_copy_counts(const compare::subject& s) {
  return counts_over(s, [&](std::size_t, std::int64_t i) { return s.output.row(i); });
}

std::optional<compare::suspicion> answer_copy_counts(const compare::subject& s, const std::vector<float>& witnessed) {
  const auto n = static_cast<std::size_t>(s.problem->n);
  if (const std::size_t rows = witnessed_rows(s).size(); witnessed.size() != rows * n)
    throw std::invalid_argument(fmt::format("answer_copy_counts: {} values for {} witnessed rows of {}", witnessed.size(), rows, n));
  return counts_over(s, [&](std::size_t r, std::int64_t) { return witnessed.data() + r * n; });
}

bool suspected(const compare::suspicion& c) {
  return c.differing >= kMinimumDiffering && static_cast<double>(c.matched) >= kShareMatched * static_cast<double>(c.differing);
}

std::string suspicion_note(const compare::suspicion& c) {
  return fmt::format("suspicious: the output has the exact reference's bits on {} of the {} sampled elements where the "
                     "declared arithmetic rounds away from them (an honest kernel matches a minority): the kernel may "
                     "return an answer it did not compute, or its arithmetic is more exact than declared",
                     c.matched, c.differing);
}

}  // namespace mqa::judge
