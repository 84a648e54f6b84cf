#include "paged_sample.hpp"

#include <bit>
#include <numeric>

#include "validator/compare/comparator.hpp"

namespace mqa::diagnose {

std::vector<request_rows> group_by_request(const paged::problem& p, std::span<const std::int64_t> rows) {
  std::vector<request_rows> groups;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::int64_t b = rows[r] / p.next_n;
    if (groups.empty() || groups.back().request != b) groups.push_back({b, {}, r});
    groups.back().local.push_back(rows[r] - b * p.next_n);
  }
  return groups;
}

cut::problem cut_request(const exact::problem& dense, const request_rows& rows, const cut::selection& at) {
  return cut::cut_problem(dense, {rows.local, at.keys, cut::consecutive(0, dense.heads), cut::consecutive(0, dense.head_dim)});
}

judged_problem sampled_requests(const paged::problem& p, const cut::selection& at,
                                const kernels::cpu::paged_reading& reading) {
  std::vector<cut::problem> cuts;
  for (const request_rows& g : group_by_request(p, at.rows))
    cuts.push_back(cut_request(kernels::cpu::read_request(reading, p, g.request).view, g, at));
  return judged_problem::by_request(std::move(cuts));
}

std::vector<float> run_on_sample(const kernels::cpu::model_config& config, const kernels::cpu::paged_reading& reading,
                                 const paged::problem& p, const cut::selection& at, std::int64_t stride, int launch) {
  const std::size_t keys = at.keys.size();
  std::vector<float> values(at.rows.size() * keys, std::bit_cast<float>(compare::kPoisonBits));
  for (const request_rows& g : group_by_request(p, at.rows)) {
    const kernels::cpu::owned_problem dense = kernels::cpu::read_request(reading, p, g.request);
    // The request's rows as run_paged_model lays them out (its first row at offset 0), so that a
    // wrapped store lands where it does there.
    const kernels::output_view layout{nullptr, p.next_n, p.max_context, stride};
    const kernels::cpu::sampled_output only{g.local, at.keys, values.data() + g.first * keys};
    kernels::cpu::run_model(config, dense.view, layout, launch, &only);
  }
  return values;
}

}  // namespace mqa::diagnose
