// What an output is judged against: the exact reference under the contract's relu rule (and its
// bfloat16 rounding under a bf16 contract), and, for a contract whose dot accumulator is modelled
// bit for bit, the centre: the exact value of the operation with every dot replaced by the model's.
// A case computes each once, however many variants or launches are judged against it
// (reference_cache).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "reference/operation.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::judge {

using engines = operation::engines;

// The options a contract's reference is computed with: its relu rule, and with bf16 logits the
// correctly rounded bfloat16 values too (the comparator needs them).
exact::options reference_options(const kernels::contract& c, unsigned threads = 0);

// The options a modelled contract's centre is computed with: the reference's, every dot the
// instruction model's (c's dot accumulator must have one).
exact::options centre_options(const kernels::contract& c, unsigned threads = 0);

// The rows of `rows` (ascending) modelled contract c's centre is computed on, and the output then
// judged on: every one where the engines compute the model on a GPU (engines::on_device; for a
// paged problem, `paged` set and p its rows, engines::paged_on_device); on the CPU all of them up
// to about 2^34 multiply-adds, past that a deterministic sample of the problem's rows (first,
// last, window edges, random ones) among them.
std::vector<std::int64_t> centre_rows(const exact::problem& p, const paged::problem* paged,
                                      const std::vector<std::int64_t>& rows, const kernels::contract& c,
                                      const engines& e = {});

// The centre on exactly `rows` (chosen by centre_rows); nullopt for a contract whose dot accumulator
// is not modelled, which is judged around the reference itself. Throws input_error when the
// instruction does not take the problem's formats or head_dim.
std::optional<exact::result> centre_on(const kernels::contract& c, const exact::problem& p, const paged::problem* paged,
                                       std::vector<std::int64_t> rows, unsigned threads = 0, const engines& e = {});

// centre_on on centre_rows of the reference's rows.
std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const paged::problem* paged, const exact::result& reference,
                                        unsigned threads = 0, const engines& e = {});

// The centre at element (i, j) alone (the reference under a contract not modelled): the value a
// finding first seen in a row outside the centre's shows as expected (compare/outside_centre.hpp).
float centre_at(const kernels::contract& c, const exact::problem& p, const paged::problem* paged, std::int64_t i,
                std::int64_t j);

// The references of one problem, each computed on first use and kept: keyed by what changes them
// (relu rule and logits precision; for a centre also the model and its promotion interval).
class reference_cache {
 public:
  reference_cache(const exact::problem& p, const paged::problem* paged, engines e = {}, unsigned threads = 0);

  const exact::result& reference(const kernels::contract& c);
  // What a bundle stores (reference.npy): the keeps-NaN reference, whatever relu rule c declares.
  const exact::result& keeps_nan(const kernels::contract& c);
  // Null unless c's dot accumulator is modelled.
  const exact::result* centre(const kernels::contract& c);

  double reference_seconds() const { return reference_seconds_; }  // centres included
  double centre_seconds() const { return centre_seconds_; }

 private:
  const exact::problem& p_;
  const paged::problem* paged_;
  engines engines_;
  unsigned threads_;
  std::map<std::tuple<exact::relu_rule, bool>, exact::result> references_;
  std::map<std::tuple<exact::relu_rule, bounds::dot_accumulator, std::int64_t, bool>, exact::result> centres_;
  double reference_seconds_ = 0, centre_seconds_ = 0;
};

}  // namespace mqa::judge
