// exact_logits(): the device computes and certifies (exact_device.hpp); what it leaves open goes
// to the CPU reference, whole rows where a row has a non-finite input and gathered keys
// otherwise; then sampled elements are re-computed on the CPU and must agree bit for bit.
#include "reference/exact/gpu/exact_logits.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "reference/exact/gpu/exact_device.hpp"
#include "reference/exact/gpu/model_rule.hpp"
#include "reference/gpu/problem_view.hpp"

namespace mqa::gpu {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::vector<std::int64_t> resolve_rows(const exact::problem& p, const std::vector<std::int64_t>& requested) {
  if (requested.empty()) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(p.m));
    for (std::int64_t i = 0; i < p.m; ++i) all[static_cast<std::size_t>(i)] = i;
    return all;
  }
  for (std::size_t r = 0; r < requested.size(); ++r)
    if (requested[r] < 0 || requested[r] >= p.m || (r > 0 && requested[r] <= requested[r - 1]))
      throw std::invalid_argument("exact_logits: rows must be strictly ascending and in [0, m)");
  return requested;
}

// Row `row` of p against the keys `keys` (ascending, in the row's window) as a problem of its
// own: one query row, the keys gathered, a window covering them all. Its exact values are the
// original problem's at those keys: the formula reads nothing else.
struct gathered_problem {
  std::vector<std::uint8_t> k;
  std::vector<float> k_scale;
  std::int32_t ks = 0, ke = 0;
  exact::problem problem;

  gathered_problem(const exact::problem& p, std::int64_t row, const std::vector<std::int64_t>& keys) {
    const auto dim = static_cast<std::size_t>(p.head_dim), heads = static_cast<std::size_t>(p.heads);
    for (const std::int64_t j : keys) {
      const auto at = static_cast<std::size_t>(j);
      k.insert(k.end(), p.k.begin() + static_cast<std::ptrdiff_t>(at * dim),
               p.k.begin() + static_cast<std::ptrdiff_t>((at + 1) * dim));
      k_scale.push_back(p.k_scale[at]);
    }
    ke = static_cast<std::int32_t>(keys.size());
    problem = p;
    problem.m = 1;
    problem.n = static_cast<std::int64_t>(keys.size());
    problem.q = p.q.subspan(static_cast<std::size_t>(row) * heads * dim, heads * dim);
    problem.k = k;
    problem.k_scale = k_scale;
    problem.weights = p.weights.subspan(static_cast<std::size_t>(row) * heads, heads);
    problem.ks = std::span<const std::int32_t>(&ks, 1);
    problem.ke = std::span<const std::int32_t>(&ke, 1);
  }
};

exact::result compute_gathered(const exact::problem& p, std::int64_t row, const std::vector<std::int64_t>& keys,
                               const exact::options& base) {
  const gathered_problem g(p, row, keys);
  exact::options o;
  o.relu = base.relu;
  o.threads = 1;
  o.dot_model = base.dot_model;  // a modelled centre is settled and checked by the CPU's model
  o.promote_every = base.promote_every;
  return exact::compute(g.problem, o);
}

// The CPU settles what the device left open. Returns the multiprecision count of those calls.
std::int64_t settle_open_elements(const exact::problem& p, const exact_gpu_options& o, exact::result& out,
                                  const exact_device_output& device) {
  const auto n = static_cast<std::size_t>(p.n);
  std::int64_t multiprecision = 0;
  exact::options whole = o.reference;
  whole.rows.clear();
  for (std::size_t r = 0; r < out.rows.size(); ++r)
    if (device.special_row[r]) whole.rows.push_back(out.rows[r]);
  if (!whole.rows.empty()) {
    const exact::result cpu = exact::compute(p, whole);
    std::size_t next = 0;
    for (std::size_t r = 0; r < out.rows.size() && next < cpu.rows.size(); ++r) {
      if (out.rows[r] != cpu.rows[next]) continue;
      std::copy_n(cpu.logits.begin() + static_cast<std::ptrdiff_t>(next * n), n,
                  out.logits.begin() + static_cast<std::ptrdiff_t>(r * n));
      std::copy_n(cpu.magnitude.begin() + static_cast<std::ptrdiff_t>(next * n), n,
                  out.magnitude.begin() + static_cast<std::ptrdiff_t>(r * n));
      ++next;
    }
    multiprecision += cpu.undecided_by_fast_path;
  }
  std::map<std::int64_t, std::vector<std::int64_t>> keys_by_row;  // row position -> keys
  for (const auto& [r, j] : device.undecided) keys_by_row[r].push_back(j);
  // Rows are independent and write disjoint elements: o.reference.threads workers take them in
  // turn. The integer engine's head-sum bound, looser than Dot2's, leaves thousands of elements
  // open at the production shape (on one core, over ten thousand of them took about a second).
  const std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> open(keys_by_row.begin(), keys_by_row.end());
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> settled_by_multiprecision{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      for (std::size_t x = next++; x < open.size(); x = next++) {
        const auto& [r, keys] = open[x];
        const exact::result cpu = compute_gathered(p, out.rows[static_cast<std::size_t>(r)], keys, o.reference);
        for (std::size_t y = 0; y < keys.size(); ++y) {
          const std::size_t at = static_cast<std::size_t>(r) * n + static_cast<std::size_t>(keys[y]);
          out.logits[at] = cpu.logits[y];
          out.magnitude[at] = cpu.magnitude[y];
        }
        settled_by_multiprecision += cpu.undecided_by_fast_path;
      }
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = open.size();  // the others stop after their current row
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads =
      std::min<std::size_t>(o.reference.threads == 0 ? hardware : o.reference.threads, open.size());
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }
  if (failure) std::rethrow_exception(failure);
  return multiprecision + settled_by_multiprecision;
}

bool same_value(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

[[noreturn]] void disagree(const char* what, std::int64_t row, std::int64_t key, double gpu, double cpu) {
  throw std::logic_error(std::string("exact_logits: GPU and CPU references disagree on ") + what + " at (" +
                         std::to_string(row) + ", " + std::to_string(key) + "): GPU " + std::to_string(gpu) +
                         ", CPU " + std::to_string(cpu));
}

// Re-computes sampled elements on the CPU: logits bit for bit, magnitudes within what two upper
// bounds of the same A may differ by (each is within a relative 2 (heads + head_dim + 3) 2^-52
// above A: reference/exact/magnitude.hpp), -inf and 0 just outside the window.
std::int64_t cross_check(const exact::problem& p, const exact_gpu_options& o, const exact::result& out) {
  if (out.rows.empty() || p.n == 0) return 0;
  std::mt19937_64 random(o.check_seed ^ static_cast<std::uint64_t>(p.m * 1000003 + p.n));
  std::vector<std::size_t> positions{0, out.rows.size() - 1};
  while (positions.size() < std::min(o.check_rows, out.rows.size()))
    positions.push_back(std::uniform_int_distribution<std::size_t>(0, out.rows.size() - 1)(random));
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  const auto n = static_cast<std::size_t>(p.n);
  const double slack = 4.0 * static_cast<double>(p.heads + p.head_dim + 3) * 0x1p-52;
  std::int64_t checked = 0;
  for (const std::size_t r : positions) {
    const std::int64_t row = out.rows[r];
    const exact::window w = exact::clamped_window(p, row);
    for (const std::int64_t outside : {w.begin - 1, w.end}) {
      if (outside < 0 || outside >= p.n || (w.begin <= outside && outside < w.end)) continue;
      const std::size_t at = r * n + static_cast<std::size_t>(outside);
      if (!(std::isinf(out.logits[at]) && out.logits[at] < 0) || out.magnitude[at] != 0)
        disagree("the mask", row, outside, out.logits[at], -std::numeric_limits<double>::infinity());
      ++checked;
    }
    if (w.empty()) continue;
    std::vector<std::int64_t> keys{w.begin, w.begin + 1, w.end - 2, w.end - 1};
    while (keys.size() < o.check_keys_per_row + 4 && static_cast<std::int64_t>(keys.size()) < w.end - w.begin + 4)
      keys.push_back(std::uniform_int_distribution<std::int64_t>(w.begin, w.end - 1)(random));
    std::erase_if(keys, [&](std::int64_t j) { return j < w.begin || j >= w.end; });
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    const exact::result cpu = compute_gathered(p, row, keys, o.reference);
    for (std::size_t x = 0; x < keys.size(); ++x) {
      const std::size_t at = r * n + static_cast<std::size_t>(keys[x]);
      if (!same_value(out.logits[at], cpu.logits[x])) disagree("a logit", row, keys[x], out.logits[at], cpu.logits[x]);
      const double g = out.magnitude[at], c = cpu.magnitude[x];
      if (!(g == c || std::fabs(g - c) <= slack * std::max(g, c))) disagree("a magnitude", row, keys[x], g, c);
      ++checked;
    }
  }
  return checked;
}

// Reserves a result's buffer and asks the kernel for transparent huge pages on it before its first
// touch: gigabytes touched page by page are bound by page faults, and glibc's malloc asks for huge
// pages only under GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which halved the first touch of an
// output's host buffers on the H200 (docs/measurements.md). Advice only: where the kernel declines
// (THP off), nothing changes.
template <class T>
void reserve_for_first_touch(std::vector<T>& v, std::size_t count) {
  v.reserve(count);
#ifdef __linux__
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(v.data()), last = first + count * sizeof(T);
  const std::uintptr_t begin = (first + page - 1) / page * page, end = last / page * page;
  if (page > 0 && end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

}  // namespace

bool modelled_centre_on_device(const exact::problem& p, const exact::options& o) {
  if (o.dot_model == nullptr ||
      mma::why_unusable(*o.dot_model, p.q_format, p.k_format, p.head_dim, o.promote_every).has_value())
    return false;
  try {
    (void)view_of(p);
  } catch (const std::invalid_argument&) {
    return false;
  }
  return centre_unsupported(p.head_dim) == nullptr;
}

bool computes_on_device(const exact::problem& p, const exact::options& o) {
  if (o.dot_model != nullptr) return o.known_logits.empty() && modelled_centre_on_device(p, o);
  try {
    const host_problem h = view_of(p);
    return dots_exact_in_float64(h.q_format, h.k_format, p.head_dim);
  } catch (const std::invalid_argument&) {
    return false;
  }
}

exact::result exact_logits(const exact::problem& p, const exact_gpu_options& o, exact_gpu_report* report) {
  // The device memory exact_on_device computes in is the process's one set, kept between calls
  // (exact_kernel.hip): calls from two threads (two bundles judged from two Python threads) take
  // turns, or one would free what the other's kernels still read.
  static std::mutex one_call_at_a_time;
  const std::lock_guard turn(one_call_at_a_time);
  exact_gpu_report local;
  exact_gpu_report& rep = report != nullptr ? *report : local;
  rep = {};
  host_problem h;
  try {
    h = view_of(p);
  } catch (const std::invalid_argument& e) {
    rep.why_cpu = e.what();  // exact::compute names the problem in its own words, or accepts it
    return exact::compute(p, o.reference);
  }
  const mma::instruction* dot_model = o.reference.dot_model;
  if (dot_model != nullptr) {
    // The CPU refuses what the instruction does not take (and known exact logits under a model),
    // in its own words.
    if (mma::why_unusable(*dot_model, p.q_format, p.k_format, p.head_dim, o.reference.promote_every) ||
        !o.reference.known_logits.empty())
      return exact::compute(p, o.reference);
    if (const char* why = centre_unsupported(p.head_dim)) {
      rep.why_cpu = why;
      return exact::compute(p, o.reference);
    }
  } else if (!dots_exact_in_float64(h.q_format, h.k_format, p.head_dim)) {
    rep.why_cpu = "dot products of these formats exceed float64's 53 bits (the CPU reference uses int128)";
    return exact::compute(p, o.reference);
  }
  std::optional<model::chain_rule> rule;
  if (dot_model != nullptr) rule = model::chain_rule_of(*dot_model, o.reference.promote_every);
  rep.on_device = true;
  exact::result out;
  out.rows = resolve_rows(p, o.reference.rows);
  const std::size_t cells = out.rows.size() * static_cast<std::size_t>(p.n);

  auto start = clock_type::now();
  exact_device_output device;
  // While the kernels run: the result's memory, logits and magnitudes in two threads (first
  // touch of gigabytes is page-fault bound, a few GB/s per thread).
  auto allocate = [&] {
    const auto begin = clock_type::now();
    std::exception_ptr failure;
    std::thread logits([&] {
      try {
        reserve_for_first_touch(out.logits, cells);
        out.logits.resize(cells);
      } catch (...) {
        failure = std::current_exception();
      }
    });
    try {
      reserve_for_first_touch(out.magnitude, cells);
      out.magnitude.resize(cells);
    } catch (...) {
      logits.join();
      throw;
    }
    logits.join();
    if (failure) std::rethrow_exception(failure);
    device.logits = out.logits.data();
    device.magnitude = out.magnitude.data();
    rep.allocation_seconds = seconds_since(begin);
  };
  exact_on_device(h, out.rows.data(), static_cast<std::int64_t>(out.rows.size()), device, allocate, o.integer_dots,
                  o.warpgroup_dots, rule ? &*rule : nullptr);
  rep.device_seconds = seconds_since(start);
  rep.kernel_seconds = device.kernel_seconds;
  rep.dot_engine = device.dot_engine;
  rep.open_elements = static_cast<std::int64_t>(device.undecided.size());
  rep.special_rows = std::count(device.special_row.begin(), device.special_row.end(), std::uint8_t{1});

  start = clock_type::now();
  out.undecided_by_fast_path = settle_open_elements(p, o, out, device);
  rep.fallback_seconds = seconds_since(start);

  start = clock_type::now();
  rep.cross_checked = cross_check(p, o, out);
  rep.cross_check_seconds = seconds_since(start);
  return out;
}

}  // namespace mqa::gpu
