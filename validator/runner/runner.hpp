// Runs one variant on one problem the way the validator trusts: the output is poisoned first (so
// `unwritten` is visible), the row stride is padded (so an ignored stride shows), and a variant
// that declares determinism is launched twice and compared bit for bit (validator/judge). A paged
// problem runs the same way through the variant's paged entry point.
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
  double suspicion = 0;    // the witness of the declared arithmetic (validator/judge/suspicion.hpp)
  double diagnosis = 0;    // validator/diagnose on a failing judgement (when asked for)
  // Buffers and launches run on a launch queue (below) while the main thread judges: `waited` is
  // how long it blocked for them; buffers + launches - waited ran alongside the main thread's work.
  double waited = 0;

  stage_seconds& operator+=(const stage_seconds& o) {
    buffers += o.buffers, launches += o.launches, judge += o.judge;
    determinism += o.determinism, suspicion += o.suspicion, diagnosis += o.diagnosis, waited += o.waited;
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
// output is judged, and the next variant's launches while this one is judged and diagnosed. A
// variant sees the same calls in the same order as without the queue, never two at once.
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

// Launches `v` (or takes the launches `begun` ahead by the caller) and judges its outputs with
// judge::judge: `paged` null, the prefill operation on p; else the paged operation on *paged, p its
// rows (paged::rows_view). `reference` must have been computed with the variant's declared relu
// rule; `centre`, when the contract needs one, by judge::centre_for on the same rows. With
// `diagnose`, findings get the cause validator/diagnose reproduces (both launches at hand, so
// `nondeterministic` can be explained). `reuse`: the output buffers to poison and launch into (kept
// across a case's variants); null: own ones. `begun` set: `reuse` is not used.
// `judged`, where set, is called with the first launch's subject and the comparator's judgement of it,
// before the determinism check and the diagnosis.
using judged_hook = std::function<void(const compare::subject&, const compare::judgement&)>;
outcome run(const kernels::variant& v, const exact::problem& p, const paged::problem* paged,
            const exact::result& reference, const exact::result* centre, std::optional<std::int64_t> topk,
            unsigned threads = 0, bool diagnose = false, buffers* reuse = nullptr, launches begun = {},
            const judged_hook& judged = {});

}  // namespace mqa::runner
