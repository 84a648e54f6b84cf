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

#include "validator/compare/columns.hpp"
#include "validator/judge/judge.hpp"

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
  // A fill is bound by memory: no more threads than cores, and none for less than 64 Ki values
  // (a --threads far past what the system lets a process start is asked of the other steps).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::clamp<std::size_t>(size >> 16, 1, std::min(threads ? threads : cores, cores)));
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
  // A relative kernel gets an [m, relative_width] output and is judged on its absolute image.
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
                 unsigned threads, bool diagnose, buffers* reuse, launches begun, const judged_hook& judged) {
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

  judge::options judging{.diagnose = diagnose, .launch_findings = {}};
  if (result.launch.guard_band_violations > 0) {
    compare::finding f;
    f.kind = compare::finding_class::out_of_bounds;
    f.count = result.launch.guard_band_violations;
    f.detail = fmt::format("writes outside the output buffer: {} canary words overwritten, the first at offset {} "
                           "floats from the output's start",
                           result.launch.guard_band_violations, result.launch.first_violation_offset);
    judging.launch_findings.push_back(f);
  }
  compare::subject s = compare::subject_of(p, paged, v.declared, topk, first_judged, threads);
  // An indexer's second stage runs on the logits it wrote (their absolute image), at the case's k
  // (the default where unset: 2048, as DeepSeek-V3.2's index_topk).
  std::vector<std::int64_t> indices;
  if (v.topk) {
    const std::int64_t k = topk.value_or(2048);
    indices.assign(static_cast<std::size_t>(p.m * k), std::int64_t{-2});  // -2: no kernel writes it
    const kernels::indices_view out{indices.data(), p.m, k};
    v.topk->select(p, first_judged, out);
    s.indices = out;
    s.topk_convention = v.topk->convention;
  }
  s.reference = &reference;
  s.centre = centre;
  judge::seconds spent;
  auto start = clock::now();
  result.judgement = compare::judge(s);
  spent.compare += since(start);
  if (judged) judged(s, result.judgement);
  if (l.variant.declared.deterministic) {
    wait_for(l.second);
    s.repeat = judged_view(kernels::output_view{l.into->second.data(), p.m, width, l.stride}, second_absolute);
  }
  judge::finish(s, result.judgement, judging, &spent);
  result.seconds.judge += spent.compare;
  result.seconds.determinism += spent.determinism;
  result.seconds.suspicion += spent.suspicion;
  result.seconds.diagnosis += spent.diagnosis;
  return result;
}

}  // namespace

std::int64_t padded_stride(std::int64_t n) { return (n + 63) / 64 * 64 + 64; }

outcome run(const kernels::variant& v, const exact::problem& p, const paged::problem* paged,
            const exact::result& reference, const exact::result* centre, std::optional<std::int64_t> topk,
            unsigned threads, bool diagnose, buffers* reuse, launches begun, const judged_hook& judged) {
  return run_with(v, p, paged, reference, centre, topk, threads, diagnose, reuse, std::move(begun), judged);
}

}  // namespace mqa::runner
