// The paged decode path of the CPU model: a kernel gathers each request's keys from the
// paged cache through its block table, then computes the request's rows as model.hpp's loop does
// on a dense problem (same arithmetic knobs, same prefill planted bugs). How it reads the cache and
// which window it gives each row are the knobs of the decode path's own planted bugs; all off, it
// reads exactly what reference/paged/problem.hpp says.
#pragma once

#include <cstdint>

#include "kernels/cpu/model.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::kernels::cpu {

enum class paged_window : std::uint8_t {
  per_row,         // the operation's rule (paged::window_end)
  without_next_n,  // 1-D form: k <= L - t instead of L - next_n + t (ROCm/aiter#4290)
  last_row,        // every row of a request takes its last row's window (one shared context length)
};

struct paged_reading {
  // > 0: a block's byte offset (block x page stride) is held in a signed integer that overflows at
  // this many bytes (2^31 for int32, scaled down so a small cache reaches it); a block whose offset
  // reaches it reads as zeros, as an AMD buffer load returns 0 for an out-of-range offset
  // (ROCm/aiter#4774, vllm#52109: logits of exactly 0.0 past 2 GiB).
  std::int64_t block_offset_overflows_at = 0;
  // Each key read as a [head_dim codes][4-byte scale] record at slot x (head_dim + 4), instead of
  // the block's codes followed by its scales (vllm#40991, #50576): only slot 0's codes are right.
  bool scales_interleaved = false;
  // The block table ignored: logical block i read as physical block i.
  bool logical_blocks = false;
  paged_window window = paged_window::per_row;

  bool operator==(const paged_reading&) const = default;  // all off: the operation's reading
};

// The end of row `row`'s window as a kernel with `r` computes it.
std::int64_t kernel_window_end(const paged_reading& r, const paged::problem& p, std::int64_t row);

// Request b as the kernel reads it: a dense problem of its next_n rows (q and weights copied) over
// max_context keys, holding every key its block table addresses as `r` reads it (also past the
// windows, where a planted window bug reads the cache) and zeros where it addresses none, with
// windows [0, the kernel's window end). run_paged_model runs the model loop on exactly this,
// and the diagnosis (validator/diagnose) re-runs it on a sample of rows and keys.
owned_problem read_request(const paged_reading& r, const paged::problem& p, std::int64_t request);

// Blocks and entries the kernel cannot address (an entry outside the cache, a logical block past
// the table) read as zeros: a CPU model cannot fault where a GPU kernel might.
launch_report run_paged_model(const model_config& config, const paged_reading& reading, const paged::problem& p,
                              const output_view& out, int run_index);

}  // namespace mqa::kernels::cpu
