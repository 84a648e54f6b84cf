#include "runner.hpp"

#include <bit>
#include <chrono>
#include <cmath>
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/paged/exact.hpp"
#include "validator/compare/columns.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/input_error.hpp"

namespace mqa::runner {
namespace {

// Every element holds the poison of the contract's output dtype (compare::poison_bits). Filled by
// every core: two production outputs are 4 GiB, which one core writes in about a second.
void poison(std::vector<float>& buffer, std::int64_t m, std::int64_t stride, const kernels::contract& c,
            unsigned threads) {
  const float value = std::bit_cast<float>(compare::poison_bits(c.logits));
  const auto size = static_cast<std::size_t>(m * stride);
  if (buffer.size() != size) {
    buffer.clear();
    buffer.shrink_to_fit();
    buffer.resize(size);  // value-initialised once; reused buffers keep their pages
  }
  threads = std::max(1u, threads ? threads : std::thread::hardware_concurrency());
  std::vector<std::jthread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(size * t / threads),
                buffer.begin() + static_cast<std::ptrdiff_t>(size * (t + 1) / threads), value);
    });
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

using engine = std::function<exact::result(const exact::options&)>;

// `p` stands for the rows (a paged problem's rows_view); `compute` is the operation's reference.
std::optional<exact::result> centre_with(const kernels::contract& c, const exact::problem& p,
                                         std::vector<std::int64_t> rows, unsigned threads, const engine& compute) {
  const mma::instruction* model = bounds::traits(c.dot).model;
  if (model == nullptr) return std::nullopt;
  if (const auto why = mma::why_unusable(*model, p.q_format, p.k_format, p.head_dim, c.promote_every))
    throw input_error(*why);
  exact::options o = reference_options(c, threads);
  o.rows = std::move(rows);
  o.dot_model = model;
  o.promote_every = c.promote_every;
  return compute(o);
}

using launcher = std::function<kernels::launch_report(const kernels::output_view&, int run_index)>;

// What one launch gave: the launch's report (the first's is kept) and where its time went.
struct launched {
  kernels::launch_report report;
  double buffers = 0, launches = 0;
};

}  // namespace

struct launch_queue::state {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::function<void()>> jobs;
  bool closing = false;
  std::thread worker;  // last: started once the rest exists
};

launch_queue::launch_queue() : s_(std::make_unique<state>()) {
  s_->worker = std::thread([s = s_.get()] {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(s->mutex);
        s->ready.wait(lock, [s] { return s->closing || !s->jobs.empty(); });
        if (s->closing) return;  // jobs not begun are dropped: their promises break
        job = std::move(s->jobs.front());
        s->jobs.pop_front();
      }
      job();
    }
  });
}

launch_queue::~launch_queue() {
  {
    std::lock_guard lock(s_->mutex);
    s_->closing = true;
  }
  s_->ready.notify_all();
  s_->worker.join();
  s_->jobs.clear();
}

void launch_queue::push(std::function<void()> job) {
  {
    std::lock_guard lock(s_->mutex);
    s_->jobs.push_back(std::move(job));
  }
  s_->ready.notify_all();
}

struct launches::state {
  kernels::variant variant;  // a copy: the caller's may be gone before the launches run
  launcher launch;
  buffers* into = nullptr;
  std::int64_t width = 0, stride = 0;
  bool relative = false;
  std::promise<launched> first_promise, second_promise;
  std::future<launched> first = first_promise.get_future(), second = second_promise.get_future();
};

launches start(launch_queue& queue, const kernels::variant& v, const exact::problem& p, const paged::problem* paged,
               buffers& into, unsigned threads) {
  auto s = std::make_shared<launches::state>();
  // Refused when run() takes them, not here: the caller may be starting them ahead, in another
  // variant's time.
  if ((paged == nullptr && !v.run) || (paged != nullptr && !v.run_paged)) {
    s->first_promise.set_exception(std::make_exception_ptr(std::invalid_argument(fmt::format(
        "variant '{}' implements the {} operation only", v.name, paged ? "prefill" : "paged"))));
    return launches(std::move(s));
  }
  s->variant = v;
  s->launch = paged ? launcher([s = s.get(), paged](const kernels::output_view& out, int index) {
    return s->variant.run_paged(*paged, out, index);
  })
                    : launcher([s = s.get(), &p](const kernels::output_view& out, int index) {
                        return s->variant.run(p, out, index);
                      });
  s->into = &into;
  // A relative kernel (issue 14) gets an [m, relative_width] output and is judged on its absolute image.
  s->relative = v.declared.columns == kernels::columns_layout::relative;
  s->width = s->relative ? compare::relative_width(p) : p.n;
  s->stride = padded_stride(s->width);
  const std::int64_t m = p.m;
  // The job holds the state (shared): the queue may run it after the caller has let go.
  queue.push([s, m, threads] {
    using clock = std::chrono::steady_clock;
    auto one = [&](std::vector<float>& buffer, int index) {
      launched l;
      auto at = clock::now();
      poison(buffer, m, s->stride, s->variant.declared, threads);
      l.buffers = since(at);
      at = clock::now();
      l.report = s->launch(kernels::output_view{buffer.data(), m, s->width, s->stride}, index);
      l.launches = since(at);
      return l;
    };
    try {
      s->first_promise.set_value(one(s->into->first, 0));
    } catch (...) {
      s->first_promise.set_exception(std::current_exception());
      return;  // no second launch after a failed first: the run ends with the first's error
    }
    if (!s->variant.declared.deterministic) return;
    try {
      s->second_promise.set_value(one(s->into->second, 1));
    } catch (...) {
      s->second_promise.set_exception(std::current_exception());
    }
  });
  return launches(std::move(s));
}

namespace {

outcome run_with(const kernels::variant& v, const exact::problem& p, const paged::problem* paged,
                 const exact::result& reference, const exact::result* centre, std::optional<std::int64_t> topk,
                 unsigned threads, bool diagnose, buffers* reuse, launches begun) {
  using clock = std::chrono::steady_clock;
  outcome result;
  buffers own;
  std::optional<launch_queue> queue;  // after `own`: it finishes its launch before the buffers go
  if (!begun.started()) begun = start(queue.emplace(), v, p, paged, reuse != nullptr ? *reuse : own, threads);
  launches::state& l = begun.get();
  result.stride = l.stride;
  auto wait_for = [&](std::future<launched>& f) {
    const auto at = clock::now();
    const launched done = f.get();  // rethrows what the launch threw
    result.seconds.waited += since(at);
    result.seconds.buffers += done.buffers;
    result.seconds.launches += done.launches;
    return done;
  };
  result.launch = wait_for(l.first).report;
  const std::int64_t width = l.width;
  const kernels::output_view first_view{l.into->first.data(), p.m, width, l.stride};
  std::vector<float> first_absolute, second_absolute;
  auto judged_view = [&](const kernels::output_view& written, std::vector<float>& absolute) -> kernels::output_view {
    if (!l.relative) return written;
    absolute = compare::absolute_from_relative(written, p, -INFINITY);
    return {absolute.data(), p.m, p.n, p.n};
  };
  const kernels::output_view first_judged = judged_view(first_view, first_absolute);

  compare::comparison_input in;
  in.problem = &p;
  in.paged = paged;
  in.reference = &reference;
  in.centre = centre;
  in.output = first_judged;
  in.contract = v.declared;
  in.topk = topk;
  in.poisoned = true;
  in.threads = threads;
  auto start = clock::now();
  result.judgement = compare::judge(in);
  result.seconds.judge += since(start);

  if (result.launch.guard_band_violations > 0) {
    compare::finding f;
    f.kind = compare::finding_class::out_of_bounds;
    f.count = result.launch.guard_band_violations;
    f.detail = fmt::format("writes outside the output buffer: {} canary words overwritten, the first at offset {} "
                           "floats from the output's start",
                           result.launch.guard_band_violations, result.launch.first_violation_offset);
    result.judgement.findings.push_back(f);
  }
  std::optional<kernels::output_view> second_view;
  if (l.variant.declared.deterministic) {
    wait_for(l.second);
    second_view = judged_view(kernels::output_view{l.into->second.data(), p.m, width, l.stride}, second_absolute);
    start = clock::now();
    if (auto f = compare::compare_runs(first_judged, *second_view, p, reference.rows, v.declared.mask, threads))
      result.judgement.findings.push_back(*f);
    result.seconds.determinism += since(start);
  }
  std::sort(result.judgement.findings.begin(), result.judgement.findings.end(),
            [](const auto& a, const auto& b) { return a.kind < b.kind; });
  if (diagnose && diagnose::diagnosable(v.declared, p) && !result.judgement.pass()) {
    start = clock::now();
    diagnose::evidence e;
    e.problem = &p;
    e.paged = paged;
    e.reference = &reference;
    e.centre = centre;
    e.output = first_judged;
    e.repeat = second_view;
    e.contract = v.declared;
    e.topk = topk;
    e.threads = threads;
    diagnose::explain(e, result.judgement);
    result.seconds.diagnosis += since(start);
  }
  return result;
}

}  // namespace

std::int64_t padded_stride(std::int64_t n) { return (n + 63) / 64 * 64 + 64; }

exact::options reference_options(const kernels::contract& c, unsigned threads) {
  exact::options o;
  o.relu = c.relu;
  o.threads = threads;
  o.bf16_logits = c.logits == bounds::logits_precision::bf16;
  return o;
}

std::vector<std::int64_t> centre_rows(const exact::problem& p, const std::vector<std::int64_t>& rows) {
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

std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const exact::result& reference, unsigned threads) {
  return centre_on(c, p, centre_rows(p, reference.rows), threads);
}

std::optional<exact::result> centre_for(const kernels::contract& c, const paged::problem& p, const exact::problem& rows,
                                        const exact::result& reference, unsigned threads) {
  return centre_on(c, p, rows, centre_rows(rows, reference.rows), threads);
}

std::optional<exact::result> centre_on(const kernels::contract& c, const exact::problem& p,
                                       std::vector<std::int64_t> rows, unsigned threads) {
  return centre_with(c, p, std::move(rows), threads, [&](const exact::options& o) { return exact::compute(p, o); });
}

std::optional<exact::result> centre_on(const kernels::contract& c, const paged::problem& p,
                                       const exact::problem& rows_view, std::vector<std::int64_t> rows,
                                       unsigned threads) {
  return centre_with(c, rows_view, std::move(rows), threads,
                     [&](const exact::options& o) { return paged::compute(p, o); });
}

outcome run(const kernels::variant& v, const exact::problem& p, const exact::result& reference,
            const exact::result* centre, std::optional<std::int64_t> topk, unsigned threads, bool diagnose,
            buffers* reuse, launches begun) {
  return run_with(v, p, nullptr, reference, centre, topk, threads, diagnose, reuse, std::move(begun));
}

outcome run(const kernels::variant& v, const paged::problem& p, const exact::problem& rows,
            const exact::result& reference, const exact::result* centre, std::optional<std::int64_t> topk,
            unsigned threads, bool diagnose, buffers* reuse, launches begun) {
  return run_with(v, rows, &p, reference, centre, topk, threads, diagnose, reuse, std::move(begun));
}

}  // namespace mqa::runner
