// Runs one variant on one problem the way the validator trusts: the output is poisoned first (so
// `unwritten` is visible), the row stride is padded (so an ignored stride shows), and a variant
// that declares determinism is launched twice and compared bit for bit. A paged problem
// runs the same way through the variant's paged entry point.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/compare/comparator.hpp"

namespace mqa::runner {

// Where one run's time went: the runner's own costs next to the kernel's.
struct stage_seconds {
  double buffers = 0;      // poisoning the output buffers (allocating them the first time)
  double launches = 0;     // the variant's launches, as the host sees them (both, when deterministic)
  double judge = 0;        // the comparator
  double determinism = 0;  // comparing the two launches bit for bit
  double diagnosis = 0;    // validator/diagnose on a failing judgement (when asked for)
  // Buffers and launches run on a launch queue (below) while the main thread judges: `waited` is
  // how long it blocked for them; buffers + launches - waited ran alongside the main thread's work.
  double waited = 0;

  stage_seconds& operator+=(const stage_seconds& o) {
    buffers += o.buffers, launches += o.launches, judge += o.judge;
    determinism += o.determinism, diagnosis += o.diagnosis, waited += o.waited;
    return *this;
  }
  double alongside() const { return std::max(0.0, buffers + launches - waited); }
};

struct outcome {
  compare::judgement judgement;
  kernels::launch_report launch;  // of the first launch
  std::int64_t stride = 0;
  stage_seconds seconds;
};

// Output buffers kept from one run to the next: the variants of a case reuse them (at production
// shapes each is gigabytes, whose first touch costs as much as poisoning it).
struct buffers {
  std::vector<float> first, second;
};

// Launches run one after another on a thread of their own, so that the GPU (or an adapter, or a
// CPU kernel) works while the CPU judges: a deterministic variant's second launch while its first
// output is judged, and the next variant's launches while this one is judged and diagnosed.
// A variant sees the same calls in the same order as without the queue, never two at once.
class launch_queue {
 public:
  launch_queue();
  ~launch_queue();  // waits for the launch under way; those not begun are dropped
  launch_queue(const launch_queue&) = delete;
  launch_queue& operator=(const launch_queue&) = delete;
  void push(std::function<void()> job);

 private:
  struct state;
  std::unique_ptr<state> s_;
};

// One variant's launches, begun on a queue: each buffer poisoned, then the first launch into
// into.first and, for a deterministic variant, the second into into.second. `run` takes them; the
// problem and the buffers must outlive them (the variant is copied).
class launches {
 public:
  struct state;  // runner.cpp
  launches() = default;
  explicit launches(std::shared_ptr<state> s) : s_(std::move(s)) {}
  launches(launches&&) = default;  // one run takes them: not copied
  launches& operator=(launches&&) = default;
  launches(const launches&) = delete;
  launches& operator=(const launches&) = delete;
  bool started() const { return s_ != nullptr; }
  state& get() const { return *s_; }

 private:
  std::shared_ptr<state> s_;
};
// `paged` null: the prefill operation on p; else the paged operation on *paged, p its rows_view.
launches start(launch_queue& queue, const kernels::variant& v, const exact::problem& p, const paged::problem* paged,
               buffers& into, unsigned threads = 0);

// The padded row stride used for a problem with n keys: never equal to n.
std::int64_t padded_stride(std::int64_t n);

// The options a contract's reference is computed with: its relu rule, and with bf16 logits the
// correctly rounded bfloat16 values too (the comparator needs them).
exact::options reference_options(const kernels::contract& c, unsigned threads = 0);

// The centre a contract is judged around when its dot accumulator is modelled bit for bit
// (bounds::is_modelled): the exact value with the model's dots, on the reference's rows (on a
// deterministic sample of them past about 2^34 multiply-adds: those rows are judged); nullopt
// for every other contract, which is judged around the reference itself. Throws input_error when
// the instruction does not take the problem's formats or head_dim.
std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const exact::result& reference, unsigned threads = 0);
// The same for a paged problem; `rows` is its paged::rows_view.
std::optional<exact::result> centre_for(const kernels::contract& c, const paged::problem& p, const exact::problem& rows,
                                        const exact::result& reference, unsigned threads = 0);

// The rows of `rows` (ascending) centre_for computes a centre on and the output is then judged on:
// all of them up to about 2^34 multiply-adds, past that a deterministic sample of the problem's
// rows (first, last, window edges, random ones) among them. `check`, which judges row blocks,
// chooses them once over the whole output and hands each block its share (centre_on).
std::vector<std::int64_t> centre_rows(const exact::problem& p, const std::vector<std::int64_t>& rows);

// centre_for on exactly `rows` (ascending; chosen by centre_rows already); `rows_view` is a paged
// problem's paged::rows_view.
std::optional<exact::result> centre_on(const kernels::contract& c, const exact::problem& p,
                                       std::vector<std::int64_t> rows, unsigned threads = 0);
std::optional<exact::result> centre_on(const kernels::contract& c, const paged::problem& p,
                                       const exact::problem& rows_view, std::vector<std::int64_t> rows,
                                       unsigned threads = 0);

// `reference` must have been computed with the variant's declared relu rule; `centre`, when the
// contract needs one, by centre_for on the same rows. With `diagnose`, findings get the cause
// validator/diagnose reproduces (both launches at hand, so `nondeterministic` can be explained).
// `reuse`: the output buffers to poison and launch into (kept across a case's variants); null: own ones.
// `begun`: this variant's launches, started ahead by the caller (`reuse` is then not used).
outcome run(const kernels::variant& v, const exact::problem& p, const exact::result& reference,
            const exact::result* centre, std::optional<std::int64_t> topk, unsigned threads = 0,
            bool diagnose = false, buffers* reuse = nullptr, launches begun = {});
// The variant's run_paged on p, judged as comparison_input says for a paged problem (`rows` is
// p's paged::rows_view), and diagnosed as above.
outcome run(const kernels::variant& v, const paged::problem& p, const exact::problem& rows,
            const exact::result& reference, const exact::result* centre, std::optional<std::int64_t> topk,
            unsigned threads = 0, bool diagnose = false, buffers* reuse = nullptr, launches begun = {});

}  // namespace mqa::runner
