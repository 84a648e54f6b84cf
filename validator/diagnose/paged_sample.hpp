// A paged problem in the diagnosis: a sample's rows grouped by request, each request read
// as a kernel reads it (kernels/cpu/paged.hpp: read_request, the dense problem the CPU model's
// paged twin runs its loop on), and the model run on the sampled rows and keys of each. The model
// always reads a sampled row's whole request, so a planted bug that ties a row to its request's
// other rows (one context length per request, the previous row's window) or a key to its block
// (the block table, the page layout, the block offset) writes on the sample exactly what it writes
// in the full run.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/paged.hpp"
#include "validator/cut/cut.hpp"
#include "validator/diagnose/judged.hpp"

namespace mqa::diagnose {

// The sampled rows of one request: their indices within it (row - request * next_n) and where the
// first of them sits among the sample's rows (a request's rows are consecutive there).
struct request_rows {
  std::int64_t request = 0;
  std::vector<std::int64_t> local;
  std::size_t first = 0;
};

// `rows` ascending, each in [0, batch * next_n).
std::vector<request_rows> group_by_request(const paged::problem& p, std::span<const std::int64_t> rows);

// `at`'s rows and keys of a request's dense problem (every head and dim): `local` its rows.
cut::problem cut_request(const exact::problem& dense, const request_rows& rows, const cut::selection& at);

// Each sampled request read with `reading` and cut to the sample, judged together (judged.hpp).
judged_problem sampled_requests(const paged::problem& p, const cut::selection& at,
                                const kernels::cpu::paged_reading& reading);

// The CPU model (config, reading) on `at`'s rows and keys: [rows, keys], the poison where it
// stores nothing. `stride` is the output's, which a wrapped store offset depends on.
std::vector<float> run_on_sample(const kernels::cpu::model_config& config, const kernels::cpu::paged_reading& reading,
                                 const paged::problem& p, const cut::selection& at, std::int64_t stride, int launch);

}  // namespace mqa::diagnose
