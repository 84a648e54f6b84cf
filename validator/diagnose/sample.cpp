#include "sample.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "paged_sample.hpp"

namespace mqa::diagnose {
namespace {

constexpr std::size_t kMinRows = 8;
constexpr std::uint64_t kSeed = 0xD1A6u;

std::vector<std::int64_t> sorted(const std::set<std::int64_t>& s) { return {s.begin(), s.end()}; }

const std::vector<std::int64_t>& judged_rows(const compare::subject& e) {
  return e.judged_rows ? *e.judged_rows : (e.centre ? e.centre : e.reference)->rows;
}

}  // namespace

kernels::output_view sample::view(std::vector<float>& values) const {
  const auto keys = std::ssize(at.keys);
  return {values.data(), std::ssize(at.rows), keys, keys};
}

cut::selection select_sample(const compare::subject& e, const compare::judgement& j, double model_work) {
  const exact::problem& p = *e.problem;
  const std::vector<std::int64_t>& judged = judged_rows(e);
  // What a multiply-add of the contract's model costs, in float32 ones (measured on the quick suite).
  const double cost = bounds::is_modelled(e.contract.dot)                            ? 16
                      : e.contract.dot == bounds::dot_accumulator::fp22_truncated ? 4
                                                                                  : 1;
  const double per_element = cost * std::max(1.0, static_cast<double>(p.heads) * static_cast<double>(p.head_dim));
  const double elements = std::max(64.0, model_work / per_element);

  cut::selection at = cut::selection::everything(p);
  const bool all_rows_fit = static_cast<double>(judged.size()) * static_cast<double>(p.n) <= elements;
  if (all_rows_fit) {
    at.rows = judged;
  } else {
    std::set<std::int64_t> rows;
    for (const auto& f : j.findings)
      if (f.first_row >= 0 && std::binary_search(judged.begin(), judged.end(), f.first_row)) rows.insert(f.first_row);
    const auto wanted = static_cast<std::size_t>(
        std::max<double>(kMinRows, std::floor(elements / static_cast<double>(p.n))));
    for (const auto i : exact::sample_rows(p, wanted, kSeed)) {
      if (rows.size() >= wanted) break;
      if (std::binary_search(judged.begin(), judged.end(), i)) rows.insert(i);
    }
    at.rows = sorted(rows);
    const double keys_that_fit = std::floor(elements / static_cast<double>(at.rows.size()));
    if (keys_that_fit < static_cast<double>(p.n)) {
      std::set<std::int64_t> keys;
      auto add = [&](std::int64_t key) {
        if (key >= 0 && key < p.n) keys.insert(key);
      };
      for (const auto& f : j.findings) add(f.first_col);
      for (const auto i : at.rows) {
        const exact::window w = exact::clamped_window(p, i);
        for (const auto edge : {w.begin - 1, w.begin, w.end - 1, w.end}) add(edge);
      }
      add(p.n - 1);
      const auto spaced = static_cast<std::int64_t>(std::max(0.0, keys_that_fit - static_cast<double>(keys.size())));
      for (std::int64_t t = 0; t < spaced; ++t) add(t * p.n / std::max<std::int64_t>(spaced, 1));
      at.keys = sorted(keys);
    }
  }
  return at;
}

sample take_sample(const compare::subject& e, const compare::judgement& j, double model_work) {
  const exact::problem& p = *e.problem;
  sample s;
  s.at = select_sample(e, j, model_work);
  s.whole = s.at.rows.size() == judged_rows(e).size() && std::ssize(s.at.keys) == p.n;
  s.problem = e.paged ? sampled_requests(*e.paged, s.at, {}) : judged_problem::dense(cut::cut_problem(p, s.at));
  s.reference = cut::cut_result(*e.reference, p.n, s.at.rows, s.at.keys);
  if (e.centre) s.centre = cut::cut_result(*e.centre, p.n, s.at.rows, s.at.keys);
  s.kernel = cut::cut_output(e.output, s.at.rows, s.at.keys);
  if (e.repeat) s.repeat = cut::cut_output(*e.repeat, s.at.rows, s.at.keys);
  return s;
}

compare::judgement judge_sample(const compare::subject& e, const judged_problem& judged, const exact::result& reference,
                                const exact::result* centre, std::vector<float>& output,
                                std::vector<float>* repeat, const kernels::contract& contract) {
  const exact::problem problem = judged.view();
  const kernels::output_view out{output.data(), problem.m, problem.n, problem.n};
  compare::subject in;
  in.problem = &problem;
  in.paged = judged.paged();
  in.reference = &reference;
  in.centre = centre;
  in.output = out;
  in.contract = contract;
  in.topk = e.topk;
  in.poisoned = e.poisoned;
  in.threads = e.threads;
  compare::judgement j = compare::judge(in);
  if (repeat) {
    const kernels::output_view second{repeat->data(), problem.m, problem.n, problem.n};
    if (auto f = compare::compare_runs(out, second, problem, reference.rows, contract.mask)) j.findings.push_back(*f);
  }
  return j;
}

}  // namespace mqa::diagnose
