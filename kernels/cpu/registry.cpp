#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model.hpp"
#include "paged.hpp"
#include "planted.hpp"
#include "reference/fp8/convert.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/paged/exact.hpp"

namespace mqa::kernels::cpu {
namespace {

using bounds::dot_accumulator;

// A model runs both operations: the paged one gathers each request's keys and runs the same loop
// (paged.hpp), so every arithmetic model and prefill planted bug has its decode-path twin.
variant model_variant(std::string name, std::string description, contract declared, model_config config) {
  variant v;
  v.name = std::move(name);
  v.description = std::move(description);
  v.declared = declared;
  v.run = [config](const exact::problem& p, const output_view& out, int run_index) {
    return run_model(config, p, out, run_index);
  };
  v.run_paged = [config](const paged::problem& p, const output_view& out, int run_index) {
    return run_paged_model(config, {}, p, out, run_index);
  };
  return v;
}

variant mutant(std::string name, std::string bug_class, std::vector<std::string> must_produce, std::string description,
               model_config config, contract declared = declared_arithmetic(dot_accumulator::fp32)) {
  variant v = model_variant(std::move(name), std::move(description), declared, std::move(config));
  v.must_produce = std::move(must_produce);
  v.bug_class = std::move(bug_class);
  return v;
}

// The reference engine run as a variant: proves the runner, poison, stride and comparator
// plumbing end to end under a bit-exact contract (the engine itself is checked against its own
// oracle in tests/reference/exact).
variant exact_variant(bounds::logits_precision logits = bounds::logits_precision::fp32) {
  const bool bf16 = logits == bounds::logits_precision::bf16;
  variant v;
  v.name = bf16 ? "exact-bf16" : "exact";
  v.description = bf16 ? "the reference engine with bf16 logits: the correctly rounded bfloat16, to 0 ULP"
                       : "the correctly rounded reference engine as a kernel: must match to 0 ULP";
  v.declared = declared_arithmetic(dot_accumulator::exact);
  v.declared.logits = logits;
  v.run = [bf16](const exact::problem& p, const output_view& out, int) {
    exact::options o;
    o.bf16_logits = bf16;
    const exact::result r = exact::compute(p, o);
    const std::vector<float>& values = bf16 ? r.logits_bf16 : r.logits;
    for (std::size_t row = 0; row < r.rows.size(); ++row)
      std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(row * p.n), p.n, out.row(r.rows[row]));
    return launch_report{};
  };
  if (bf16) return v;  // prefill only (prefill_only below)
  v.run_paged = [](const paged::problem& p, const output_view& out, int) {
    const exact::result r = paged::compute(p);
    for (std::size_t row = 0; row < r.rows.size(); ++row)
      std::copy_n(r.logits.begin() + static_cast<std::ptrdiff_t>(row * static_cast<std::size_t>(p.max_context)),
                  p.max_context, out.row(r.rows[row]));
    return launch_report{};
  };
  return v;
}

contract with_bf16_logits(contract c) {
  c.logits = bounds::logits_precision::bf16;
  return c;
}

contract with_relative_columns(contract c) {
  c.columns = columns_layout::relative;
  c.mask = masking::dont_care;
  return c;
}

// bf16 logits and relative columns belong to the prefill entry point here: paged
// judging refuses them (docs/roadmap.md). fp4 operands run on both operations.
variant prefill_only(variant v) {
  v.run_paged = nullptr;
  return v;
}

// A planted bug of the decode path: the fp32 model reading the cache wrongly. It
// implements the paged operation only.
variant paged_mutant(std::string name, std::string bug_class, std::vector<std::string> must_produce,
                     std::string description, paged_reading reading) {
  variant v;
  v.name = std::move(name);
  v.description = std::move(description);
  v.declared = declared_arithmetic(dot_accumulator::fp32);
  v.must_produce = std::move(must_produce);
  v.bug_class = std::move(bug_class);
  v.run_paged = [reading](const paged::problem& p, const output_view& out, int run_index) {
    return run_paged_model({}, reading, p, out, run_index);
  };
  return v;
}

contract sm90_contract() { return declared_arithmetic(dot_accumulator::sm90_wgmma); }

// DeepGEMM sm90's reduction: wgmma dots, heads in 4 lanes each scaled by k_scale.
model_config sm90_lanes() {
  model_config c;
  c.dot = dot_accumulator::sm90_wgmma;
  c.head_lanes = 4;
  return c;
}

}  // namespace

std::vector<arithmetic_model> arithmetic_models() {
  std::vector<arithmetic_model> all;
  auto add = [&](std::string name, std::string description, contract declared, model_config config) {
    all.push_back({std::move(name), std::move(description), declared, std::move(config), {}});
  };
  add("fp32-naive", "float32 dot products and head sum, left to right (a torch fp32 einsum)",
      declared_arithmetic(dot_accumulator::fp32), {});
  {
    model_config c;
    c.dot_chunk = 16;
    c.pairwise_heads = true;
    add("fp32-blocked", "float32 in 16-wide chunks as MFMA accumulates, heads summed as a tree",
        declared_arithmetic(dot_accumulator::fp32), c);
  }
  {
    model_config c;
    c.dot = dot_accumulator::fp22_truncated;
    add("fp22-truncated", "Hopper fp8 MMA without promotion: 13 fraction bits, truncated, per addition",
        declared_arithmetic(dot_accumulator::fp22_truncated), c);
  }
  {
    model_config c;
    c.dot = dot_accumulator::bf16;
    add("bf16-dot", "float32 dot products rounded to bfloat16 before relu (a bf16 einsum)",
        declared_arithmetic(dot_accumulator::bf16), c);
  }
  {
    model_config c;
    c.relu = exact::relu_rule::fmax;
    add("fp32-fmax", "float32, relu as fmaxf / tl.maximum: a NaN dot becomes 0",
        declared_arithmetic(dot_accumulator::fp32, exact::relu_rule::fmax), c);
  }

  // Kernels on the matrix units, modelled bit for bit (reference/mma), judged under the model.
  add("sm90-wgmma",
      "Hopper fp8 wgmma chained over D (13-bit truncating accumulator), heads in 4 lanes each scaled by k_scale, as "
      "DeepGEMM's sm90 kernel reduces",
      sm90_contract(), sm90_lanes());
  {
    model_config c;
    c.dot = dot_accumulator::sm90_wgmma;
    c.promote_every = 32;
    c.scale = bounds::scale_placement::into_weights;
    contract declared = sm90_contract();
    declared.promote_every = 32;
    add("sm90-wgmma-promoted",
        "Hopper fp8 wgmma with every 32-element chain promoted into float32 (DeepGEMM's GEMMs), k_scale folded into "
        "the weights",
        declared, c);
  }
  {
    model_config c;
    c.dot = dot_accumulator::gfx942_mfma;
    c.pairwise_heads = true;
    add("gfx942-mfma",
        "CDNA3 v_mfma_f32_16x16x32_fp8_fp8 chained over D (model not validated on AMD hardware), heads as a tree; "
        "fnuz formats only",
        declared_arithmetic(dot_accumulator::gfx942_mfma), c);
  }
  {
    // The gfx942 question (reference/bounds/README.md): the CDNA3 kernel declared plain float32.
    // Its directed roundings (floor) stay below the fp32 bound for head_dim >= 32; CI proves it
    // on every suite and 100 seeds of every layout.
    model_config c;
    c.dot = dot_accumulator::gfx942_mfma;
    c.pairwise_heads = true;
    add("gfx942-mfma-as-fp32", "the gfx942 MFMA kernel (model not validated on AMD hardware) declared float32",
        declared_arithmetic(dot_accumulator::fp32), c);
    all.back().refuses = [](const exact::problem& p) -> std::optional<std::string> {
      return mma::why_unusable(mma::gfx942_mfma(), p.q_format, p.k_format, p.head_dim, 0);
    };
  }
  return all;
}

std::vector<variant> cpu_variants() {
  std::vector<variant> all;
  all.push_back(exact_variant());
  for (const auto& m : arithmetic_models()) {
    all.push_back(model_variant(m.name, m.description, m.declared, m.config));
    all.back().refuses = m.refuses;
  }
  // bf16 logits: DeepGEMM's logits_dtype = torch.bfloat16.
  all.push_back(exact_variant(bounds::logits_precision::bf16));
  {
    model_config c;
    c.logits = bounds::logits_precision::bf16;
    c.head_lanes = 4;
    all.push_back(prefill_only(model_variant("bf16-logits",
                                             "float32 arithmetic, heads in 4 lanes each scaled by k_scale (DeepGEMM "
                                             "sm90), the result stored as bfloat16",
                                             with_bf16_logits(declared_arithmetic(dot_accumulator::fp32)), c)));
  }
  {
    // Relative columns: DeepGEMM with max_seqlen_k > 0 and clean_logits = False.
    model_config c;
    c.relative_columns = true;
    c.outside = outside_fill::nothing;
    all.push_back(prefill_only(model_variant("fp32-relative",
                                             "float32, key ks[i] + c of row i at column c (DeepGEMM's max_seqlen_k), "
                                             "nothing written outside the windows",
                                             with_relative_columns(declared_arithmetic(dot_accumulator::fp32)), c)));
  }
  // The subtle bugs a loose bound lets through, each caught under the model's contract.
  {
    auto subtle = [&](std::string name, std::string description, auto plant) {
      model_config c = sm90_lanes();
      plant(c);
      all.push_back(mutant(std::move(name), "matrix-unit contracts", {"error-bound"}, std::move(description), c,
                           sm90_contract()));
    };
    subtle("mutant-sm90-dropped-head", "the last head's term never reaches the head sum",
           [](model_config& c) { c.dropped_head = 1'000'000; });
    subtle("mutant-sm90-dropped-last-element", "each dot stops one element short of head_dim",
           [](model_config& c) { c.dot_length = -1; });
    subtle("mutant-sm90-weights-off", "weights multiplied by 1.001", [](model_config& c) { c.weight_factor = 1.001f; });
    subtle("mutant-sm90-scale-off", "k_scale multiplied by 1.001", [](model_config& c) { c.scale_factor = 1.001f; });
    subtle("mutant-sm90-bf16-dot", "the MMA's dot rounded to bfloat16 before relu",
           [](model_config& c) { c.dot_to_bf16 = true; });
  }

  // Planted bugs, one per class a CPU model can express (docs/bug-classes.md).
  {
    model_config c;
    c.corrupt_inputs = [](owned_problem& p) {
      auto misread = [](fp8::format f) {
        return f == fp8::format::e4m3fn ? std::optional(fp8::format::e4m3fnuz) : std::nullopt;
      };
      read_as(p, misread(p.view.q_format), misread(p.view.k_format));
    };
    all.push_back(mutant("mutant-fnuz-reinterpret", "BUGCLASSES 1", {"scale-factor"},
                         "e4m3fn bytes read as e4m3fnuz without rescaling: every value halves", c));
  }
  {
    model_config c;
    c.corrupt_inputs = [](owned_problem& p) { normalize_to_fnuz(p, false, true); };
    all.push_back(mutant("mutant-fnuz-keeps-0x80", "BUGCLASSES 2", {"nan"},
                         "fn -> fnuz normalisation that forgets 0x80: -0 becomes NaN and poisons rows and keys", c));
  }
  {
    model_config c;
    c.corrupt_inputs = [](owned_problem& p) { normalize_to_fnuz(p, true, false); };
    all.push_back(mutant("mutant-fnuz-nan-bytes", "BUGCLASSES 3", {"error-bound"},
                         "fn -> fnuz normalisation that keeps NaN bytes: 0x7F/0xFF become +-240", c));
  }
  {
    model_config c;
    // Requantized for gfx942 with the OCP bound: e4m3fnuz's max is 240.
    c.corrupt_inputs = [](owned_problem& p) { requantize_k_to_fnuz(p, 448.0); };
    all.push_back(mutant("mutant-fnuz-bound-448", "BUGCLASSES 4", {"nan"},
                         "k requantized to e4m3fnuz with the OCP bound 448: values above 240 become NaN", c));
  }
  {
    model_config c;
    c.dot = dot_accumulator::bf16;
    all.push_back(mutant("mutant-bf16-as-fp32", "BUGCLASSES 6", {"error-bound"},
                         "bf16 dot products in a kernel that declares float32", c));
  }
  {
    model_config c;
    c.dot = dot_accumulator::fp22_truncated;
    all.push_back(mutant("mutant-fp22-as-fp32", "BUGCLASSES 7", {"error-bound"},
                         "fp8 MMA accumulation never promoted to float32, declared float32", c));
  }
  {
    model_config c;
    c.scale = bounds::scale_placement::before_relu;
    all.push_back(mutant("mutant-scale-before-relu", "BUGCLASSES 8", {"error-bound", "scale-factor"},
                         "k_scale folded into the dot before relu: wrong wherever k_scale < 0", c));
  }
  {
    model_config c;
    c.corrupt_inputs = transpose_weights;
    all.push_back(mutant("mutant-weights-transposed", "BUGCLASSES 9", {"error-bound"},
                         "weights [M, H] read as [H, M]", c));
  }
  {
    model_config c;
    c.window_of = inclusive_end_window;
    all.push_back(mutant("mutant-inclusive-end", "BUGCLASSES 11", {"mask-shift"},
                         "ke read as inclusive: key ke is written", c));
  }
  {
    model_config c;
    c.outside = outside_fill::zero;
    all.push_back(mutant("mutant-zero-fill", "BUGCLASSES 12", {"mask-leak"},
                         "clean_logits not honoured: 0 outside the window outranks negative logits", c));
  }
  {
    model_config c;
    c.skip_empty_rows = true;
    all.push_back(mutant("mutant-skip-empty-rows", "BUGCLASSES 13", {"unwritten"},
                         "rows with ks == ke return early and are never written", c));
  }
  {
    model_config c;
    c.window_of = [](const exact::problem& p, std::int64_t i) { return aligned_down_window(p, i, 4); };
    all.push_back(mutant("mutant-ks-aligned-down", "BUGCLASSES 14", {"mask-leak"},
                         "ks aligned down to a multiple of 4 without cleaning the gap", c));
  }
  {
    model_config c;
    c.window_of = unsigned_window;
    all.push_back(mutant("mutant-unsigned-window", "BUGCLASSES 15", {"mask-hole"},
                         "window bounds read as uint32: ks = -1 becomes 4294967295 and the row goes dark", c));
  }
  {
    model_config c;
    c.tail_block = 64;
    all.push_back(mutant("mutant-tail-tile", "BUGCLASSES 16", {"unwritten"},
                         "the last partial 64-column tile is never stored when N % 64 != 0", c));
  }
  {
    model_config c;
    c.offset_limit_bytes = std::int64_t{1} << 17;
    all.push_back(mutant("mutant-offset-overflow", "BUGCLASSES 17 (simulated)", {"unwritten"},
                         "byte offsets wrap at 2^17 (a 32-bit offset scaled down so a small case reaches it)", c));
  }
  {
    model_config c;
    c.window_of = previous_row_window;
    all.push_back(mutant("mutant-previous-row-window", "BUGCLASSES 19", {"mask-leak", "mask-hole"},
                         "cu_seqlen indexing off by one: each row uses the previous row's window", c));
  }
  {
    model_config c;
    c.head_order_varies = true;
    all.push_back(mutant("mutant-race", "BUGCLASSES 20", {"nondeterministic"},
                         "head-sum order depends on the launch, as an unsynchronised reduction does", c));
  }
  {
    model_config c;
    c.logits = bounds::logits_precision::bf16;
    c.head_sum_to_bf16 = true;
    all.push_back(prefill_only(mutant("mutant-bf16-rounded-twice", "bf16 logits", {"error-bound"},
                                      "bf16 logits rounded twice: the head sum kept in bfloat16, then times k_scale, "
                                      "rounded again",
                                      c, with_bf16_logits(declared_arithmetic(dot_accumulator::fp32)))));
  }
  {
    model_config c;
    c.fp4_scale_per_token = true;
    // Both operations: a paged fp4 cache's keys reach the model with their block scales (paged.hpp).
    variant v = mutant("mutant-fp4-scale-per-token", "fp4 block scales", {"error-bound", "scale-factor"},
                       "e2m1fn inputs scaled per token (the first 32-block's ue8m0 scale for the whole token) "
                       "instead of per 32-block",
                       c);
    // Its bug lives in block scales: a case without them cannot show it (cases/bugs/29 has them).
    v.refuses = [](const exact::problem& p) -> std::optional<std::string> {
      if (!exact::uses_block_scales(p.q_format) && !exact::uses_block_scales(p.k_format))
        return std::string("plants its bug in e2m1fn block scales; this case has no e2m1fn operand");
      return std::nullopt;
    };
    all.push_back(std::move(v));
  }
  {
    model_config c;
    c.outside = outside_fill::nothing;  // relative_columns left off: key j lands at column j
    all.push_back(prefill_only(mutant("mutant-relative-as-absolute", "relative columns",
                                      {"unwritten", "error-bound"},
                                      "asked for relative columns (max_seqlen_k > 0), writes key j at column j: every "
                                      "row whose window starts past 0 is shifted",
                                      c, with_relative_columns(declared_arithmetic(dot_accumulator::fp32)))));
  }

  // The decode path's planted bugs, each in cases/bugs/ with a suite of its own.
  {
    paged_reading r;
    r.block_offset_overflows_at = std::int64_t{1} << 16;
    all.push_back(paged_mutant("mutant-paged-block-offset32", "paged decode: 32-bit block offset (simulated)",
                               {"error-bound"},
                               "block byte offsets overflow at 2^16 (int32's 2^31 scaled down so a small cache "
                               "reaches it): blocks past it read zeros, as an AMD buffer load does "
                               "(ROCm/aiter#4774, vllm#52109)",
                               r));
  }
  {
    paged_reading r;
    r.scales_interleaved = true;
    all.push_back(paged_mutant("mutant-paged-interleaved-scales", "paged decode: scale layout",
                               {"error-bound", "nan", "inf"},
                               "each key read as [head_dim codes][float32 scale] at slot x (head_dim + 4), not the "
                               "block's codes then its scales (vllm#40991, #50576)",
                               r));
  }
  {
    paged_reading r;
    r.window = paged_window::without_next_n;
    all.push_back(paged_mutant("mutant-paged-window-without-next-n", "paged decode: next_n masking",
                               {"mask-leak", "mask-shift"},
                               "1-D context lengths masked as k <= L - t instead of k <= L - next_n + t "
                               "(ROCm/aiter#4290)",
                               r));
  }
  {
    paged_reading r;
    r.logical_blocks = true;
    all.push_back(paged_mutant("mutant-paged-logical-blocks", "paged decode: block table ignored", {"error-bound"},
                               "logical block i read as physical block i: the block table is ignored", r));
  }
  {
    paged_reading r;
    r.window = paged_window::last_row;
    all.push_back(paged_mutant("mutant-paged-shared-context-length", "paged decode: one length per request",
                               {"mask-leak", "mask-shift"},
                               "every row of a request masked with its last row's context length (the one the "
                               "scheduler reads), not its own",
                               r));
  }
  return all;
}

}  // namespace mqa::kernels::cpu
