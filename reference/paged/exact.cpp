#include "reference/paged/exact.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "reference/exact/dots.hpp"

namespace mqa::paged {
namespace {

// The rows to compute: all, or the requested ones once checked.
std::vector<std::int64_t> resolve_rows(const problem& p, const std::vector<std::int64_t>& requested) {
  std::vector<std::int64_t> rows;
  if (requested.empty()) {
    for (std::int64_t i = 0; i < p.rows(); ++i) rows.push_back(i);
    return rows;
  }
  for (std::size_t i = 0; i < requested.size(); ++i) {
    if (requested[i] < 0 || requested[i] >= p.rows())
      throw std::invalid_argument(fmt::format("mqa::paged: options.rows[{}] = {} is outside [0, batch * next_n = {})", i,
                                              requested[i], p.rows()));
    if (i > 0 && requested[i] <= requested[i - 1])
      throw std::invalid_argument(fmt::format("mqa::paged: options.rows must be strictly ascending, but rows[{}] = {} "
                                              "follows rows[{}] = {}",
                                              i, requested[i], i - 1, requested[i - 1]));
  }
  return requested;
}

// The selected rows of one request: positions [first, last) of result.rows.
struct request_rows {
  std::int64_t request;
  std::size_t first, last;
};

std::vector<request_rows> group_by_request(const problem& p, const std::vector<std::int64_t>& rows) {
  std::vector<request_rows> groups;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::int64_t b = rows[r] / p.next_n;
    if (groups.empty() || groups.back().request != b) groups.push_back({b, r, r});
    groups.back().last = r + 1;
  }
  return groups;
}

// The block scales of the next_n rows from row0 (an e2m1fn q), else none.
std::span<const std::uint8_t> q_scales_of(const problem& p, std::int64_t row0) {
  if (p.q_block_scale.empty()) return {};
  const auto per_row = static_cast<std::size_t>(p.heads * (p.head_dim / exact::kBlockSize));
  return p.q_block_scale.subspan(static_cast<std::size_t>(row0) * per_row, static_cast<std::size_t>(p.next_n) * per_row);
}

// One request: its keys gathered, its next_n rows as a dense problem over them, the selected rows
// computed and copied into `out` at their positions.
void compute_request(const problem& p, const exact::options& o, const dense_engine& engine, unsigned threads,
                     const request_rows& g, exact::result& out, std::atomic<std::int64_t>& undecided) {
  std::int64_t keys = 0;
  for (std::size_t r = g.first; r < g.last; ++r) keys = std::max(keys, window_end(p, out.rows[r]));
  if (keys == 0) return;  // every selected row is empty: -inf already
  const gathered_keys gathered = gather(p, g.request, keys);
  const std::int64_t row0 = g.request * p.next_n;
  std::vector<std::int32_t> ks(static_cast<std::size_t>(p.next_n), 0), ke(static_cast<std::size_t>(p.next_n));
  for (std::int64_t t = 0; t < p.next_n; ++t) ke[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(window_end(p, row0 + t));
  const auto q_row = static_cast<std::size_t>(p.heads * p.head_dim), w_row = static_cast<std::size_t>(p.heads);
  const exact::problem dense{p.next_n,
                             keys,
                             p.heads,
                             p.head_dim,
                             p.q_format,
                             p.k_format,
                             p.q.subspan(static_cast<std::size_t>(row0) * q_row, static_cast<std::size_t>(p.next_n) * q_row),
                             gathered.k,
                             gathered.k_scale,
                             p.weights.subspan(static_cast<std::size_t>(row0) * w_row, static_cast<std::size_t>(p.next_n) * w_row),
                             ks,
                             ke,
                             q_scales_of(p, row0),
                             gathered.k_block_scale};
  exact::options local = o;
  local.threads = threads;
  local.rows.clear();
  for (std::size_t r = g.first; r < g.last; ++r) local.rows.push_back(out.rows[r] - row0);
  const exact::result r = engine ? engine(dense, local) : exact::compute(dense, local);
  const auto width = static_cast<std::size_t>(p.max_context);
  for (std::size_t x = 0; x < r.rows.size(); ++x) {
    const std::size_t at = (g.first + x) * width;
    const std::size_t from = x * static_cast<std::size_t>(keys);
    std::copy_n(r.logits.begin() + static_cast<std::ptrdiff_t>(from), keys, out.logits.begin() + static_cast<std::ptrdiff_t>(at));
    if (o.magnitude)
      std::copy_n(r.magnitude.begin() + static_cast<std::ptrdiff_t>(from), keys,
                  out.magnitude.begin() + static_cast<std::ptrdiff_t>(at));
  }
  undecided += r.undecided_by_fast_path;
}

}  // namespace

exact::result compute(const problem& p, const exact::options& o, const dense_engine& engine) {
  check_problem(p);
  // known_logits are rows of the whole output; each request's dense problem has rows and keys of
  // its own, so they cannot be handed down.
  if (!o.known_logits.empty())
    throw std::invalid_argument("mqa::paged: options.known_logits is not taken (compute the paged reference in full)");
  exact::result out;
  out.rows = resolve_rows(p, o.rows);
  const std::size_t cells = out.rows.size() * static_cast<std::size_t>(p.max_context);
  out.logits.assign(cells, -std::numeric_limits<float>::infinity());
  if (o.magnitude) out.magnitude.assign(cells, 0.0);
  const std::vector<request_rows> groups = group_by_request(p, out.rows);
  std::atomic<std::int64_t> undecided{0};
  if (engine) {
    // An engine of its own (the GPU's) is not assumed to take concurrent calls.
    for (const auto& g : groups) compute_request(p, o, engine, o.threads, g, out, undecided);
    out.undecided_by_fast_path = undecided;
    return out;
  }
  // A request has next_n rows, fewer than exact::compute's blocks of rows: requests are what the
  // threads share. OpenBLAS stays single-threaded for the whole run (each call's own setting
  // would otherwise race with the others' restore).
  const exact::detail::blas_single_threaded blas;
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = static_cast<unsigned>(std::clamp<std::size_t>(o.threads == 0 ? hardware : o.threads, 1,
                                                                     std::max<std::size_t>(groups.size(), 1)));
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      for (std::size_t g = next++; g < groups.size(); g = next++) compute_request(p, o, {}, 1, groups[g], out, undecided);
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = groups.size();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  out.undecided_by_fast_path = undecided;
  return out;
}

}  // namespace mqa::paged
