#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model.hpp"
#include "paged.hpp"
#include "planted.hpp"
#include "topk.hpp"
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

// The correct model `edit` makes of the fp32-naive one.
model_config with(void (*edit)(model_config&)) {
  model_config c;
  edit(c);
  return c;
}

contract sm90_contract(std::int64_t promote_every = 0) {
  contract c = declared_arithmetic(dot_accumulator::sm90_wgmma);
  c.promote_every = promote_every;
  return c;
}

// DeepGEMM sm90's reduction: wgmma dots, heads in 4 lanes each scaled by k_scale.
model_config sm90_lanes() {
  return with([](model_config& c) {
    c.dot = dot_accumulator::sm90_wgmma;
    c.head_lanes = 4;
  });
}

// The CDNA3 kernel: MFMA dots, heads summed as a tree.
model_config gfx942_tree() {
  return with([](model_config& c) {
    c.dot = dot_accumulator::gfx942_mfma;
    c.pairwise_heads = true;
  });
}

}  // namespace

// The correct arithmetic models, in the order `mqacheck variants` lists them: each a configuration of
// the CPU loop and the contract it declares.
std::vector<model_config> models_declaring(const contract& c, const exact::problem& p) {
  std::vector<model_config> out;
  for (const auto& m : arithmetic_models()) {
    const contract& d = m.declared;
    if (d.dot == c.dot && d.heads == c.heads && d.scale == c.scale && d.weights == c.weights &&
        d.promote_every == c.promote_every && d.relu == c.relu && !(m.refuses && m.refuses(p)))
      out.push_back(m.config);
  }
  return out;
}

std::vector<arithmetic_model> arithmetic_models() {
  return {
      {.name = "fp32-naive",
       .description = "float32 dot products and head sum, left to right (a torch fp32 einsum)",
       .declared = declared_arithmetic(dot_accumulator::fp32),
       .config = {}},
      {.name = "fp32-blocked",
       .description = "float32 in 16-wide chunks as MFMA accumulates, heads summed as a tree",
       .declared = declared_arithmetic(dot_accumulator::fp32),
       .config = with([](model_config& c) {
         c.dot_chunk = 16;
         c.pairwise_heads = true;
       })},
      {.name = "fp22-truncated",
       .description = "Hopper fp8 MMA without promotion: 13 fraction bits, truncated, per addition",
       .declared = declared_arithmetic(dot_accumulator::fp22_truncated),
       .config = with([](model_config& c) { c.dot = dot_accumulator::fp22_truncated; })},
      {.name = "bf16-dot",
       .description = "float32 dot products rounded to bfloat16 before relu (a bf16 einsum)",
       .declared = declared_arithmetic(dot_accumulator::bf16),
       .config = with([](model_config& c) { c.dot = dot_accumulator::bf16; })},
      {.name = "fp32-fmax",
       .description = "float32, relu as fmaxf / tl.maximum: a NaN dot becomes 0",
       .declared = declared_arithmetic(dot_accumulator::fp32, exact::relu_rule::fmax),
       .config = with([](model_config& c) { c.relu = exact::relu_rule::fmax; })},

      // Kernels on the matrix units, modelled bit for bit (reference/mma), judged under the model.
      {.name = "sm90-wgmma",
       .description = "Hopper fp8 wgmma chained over D (13-bit truncating accumulator), heads in 4 lanes each scaled "
                      "by k_scale, as DeepGEMM's sm90 kernel reduces",
       .declared = sm90_contract(),
       .config = sm90_lanes()},
      {.name = "sm90-wgmma-promoted",
       .description = "Hopper fp8 wgmma with every 32-element chain promoted into float32 (DeepGEMM's GEMMs), k_scale "
                      "folded into the weights",
       .declared = sm90_contract(32),
       .config = with([](model_config& c) {
         c.dot = dot_accumulator::sm90_wgmma;
         c.promote_every = 32;
         c.scale = bounds::scale_placement::into_weights;
       })},
      {.name = "gfx942-mfma",
       .description = "CDNA3 v_mfma_f32_16x16x32_fp8_fp8 chained over D (model not run on AMD hardware; as "
                      "MMA-Sim's), heads as a tree; fnuz formats only",
       .declared = declared_arithmetic(dot_accumulator::gfx942_mfma),
       .config = gfx942_tree()},
      // The gfx942 question (reference/bounds/README.md): the CDNA3 kernel declared plain float32.
      // Its directed roundings (floor) stay below the fp32 bound for head_dim >= 32; CI proves it
      // on every suite and 100 seeds of every layout.
      {.name = "gfx942-mfma-as-fp32",
       .description = "the gfx942 MFMA kernel (model not run on AMD hardware; as MMA-Sim's) declared float32",
       .declared = declared_arithmetic(dot_accumulator::fp32),
       .config = gfx942_tree(),
       .refuses = [](const exact::problem& p) -> std::optional<std::string> {
         return mma::why_unusable(mma::gfx942_mfma(), p.q_format, p.k_format, p.head_dim, 0);
       }},
  };
}

namespace {

// One planted bug (docs/bug-classes.md): a correct model with one knob turned, the finding classes
// catching it must produce, and the contract it claims. A prefill bug is planted into `into` (the
// fp32-naive model unless said) and runs both operations unless `prefill_only`; a bug of the
// decode path's own reading of the cache is a `read` edit and runs the paged operation
// only. Like validator/diagnose's table of hypotheses: rows of data, one loop (cpu_variants).
struct planted_mutant {
  std::string_view name;
  std::string_view bug_class;             // what it plants: "BUGCLASSES 11", an issue, ...
  std::vector<std::string> must_produce;  // finding classes, any one of which catches it
  std::string_view description;
  void (*plant)(model_config&) = nullptr;   // the bug, on the model it is planted into
  void (*read)(paged_reading&) = nullptr;   // or: the decode path's misreading of the cache
  model_config into = {};
  contract declared = declared_arithmetic(dot_accumulator::fp32);
  bool prefill_only = false;  // bf16 logits and relative columns: paged judging refuses them
  std::optional<std::string> (*refuses)(const exact::problem&) = nullptr;
};

constexpr std::string_view kMatrixUnits = "matrix-unit contracts";

const std::vector<planted_mutant>& planted_mutants() {
  static const std::vector<planted_mutant> table{
      // The subtle bugs a loose bound lets through, each caught under the model's contract.
      {.name = "mutant-sm90-dropped-head", .bug_class = kMatrixUnits, .must_produce = {"error-bound"},
       .description = "the last head's term never reaches the head sum",
       .plant = [](model_config& c) { c.dropped_head = 1'000'000; }, .into = sm90_lanes(), .declared = sm90_contract()},
      {.name = "mutant-sm90-dropped-last-element", .bug_class = kMatrixUnits, .must_produce = {"error-bound"},
       .description = "each dot stops one element short of head_dim",
       .plant = [](model_config& c) { c.dot_length = -1; }, .into = sm90_lanes(), .declared = sm90_contract()},
      {.name = "mutant-sm90-weights-off", .bug_class = kMatrixUnits, .must_produce = {"error-bound"},
       .description = "weights multiplied by 1.001",
       .plant = [](model_config& c) { c.weight_factor = 1.001f; }, .into = sm90_lanes(), .declared = sm90_contract()},
      {.name = "mutant-sm90-scale-off", .bug_class = kMatrixUnits, .must_produce = {"error-bound"},
       .description = "k_scale multiplied by 1.001",
       .plant = [](model_config& c) { c.scale_factor = 1.001f; }, .into = sm90_lanes(), .declared = sm90_contract()},
      {.name = "mutant-sm90-bf16-dot", .bug_class = kMatrixUnits, .must_produce = {"error-bound"},
       .description = "the MMA's dot rounded to bfloat16 before relu",
       .plant = [](model_config& c) { c.dot_to_bf16 = true; }, .into = sm90_lanes(), .declared = sm90_contract()},

      // Planted bugs, one per class a CPU model can express (docs/bug-classes.md).
      {.name = "mutant-fnuz-reinterpret", .bug_class = "BUGCLASSES 1", .must_produce = {"scale-factor"},
       .description = "e4m3fn bytes read as e4m3fnuz without rescaling: every value halves",
       .plant = [](model_config& c) {
         c.corrupt_inputs = [](owned_problem& p) {
           auto misread = [](fp8::format f) {
             return f == fp8::format::e4m3fn ? std::optional(fp8::format::e4m3fnuz) : std::nullopt;
           };
           read_as(p, misread(p.view.q_format), misread(p.view.k_format));
         };
       }},
      {.name = "mutant-fnuz-keeps-0x80", .bug_class = "BUGCLASSES 2", .must_produce = {"nan"},
       .description = "fn -> fnuz normalisation that forgets 0x80: -0 becomes NaN and poisons rows and keys",
       .plant = [](model_config& c) { c.corrupt_inputs = [](owned_problem& p) { normalize_to_fnuz(p, false, true); }; }},
      {.name = "mutant-fnuz-nan-bytes", .bug_class = "BUGCLASSES 3", .must_produce = {"error-bound"},
       .description = "fn -> fnuz normalisation that keeps NaN bytes: 0x7F/0xFF become +-240",
       .plant = [](model_config& c) { c.corrupt_inputs = [](owned_problem& p) { normalize_to_fnuz(p, true, false); }; }},
      // Requantized for gfx942 with the OCP bound: e4m3fnuz's max is 240.
      {.name = "mutant-fnuz-bound-448", .bug_class = "BUGCLASSES 4", .must_produce = {"nan"},
       .description = "k requantized to e4m3fnuz with the OCP bound 448: values above 240 become NaN",
       .plant = [](model_config& c) { c.corrupt_inputs = [](owned_problem& p) { requantize_k_to_fnuz(p, 448.0); }; }},
      // The gfx942 recast as FlyDSL writes it (fp8::recast_id::flydsl), one planted bug each. Its own
      // NaN bytes read as +-240 are BUGCLASSES 3's mutant-fnuz-nan-bytes: taken out here (keeping_nan).
      {.name = "mutant-fnuz-pack-sign-extended", .bug_class = "BUGCLASSES 22", .must_produce = {"error-bound"},
       .description = "FlyDSL's fn -> fnuz recast widening each 8-code pack's low half with sign extension: a negative "
                      "element 3 turns elements 4..7 into 0xFF (-240) (ROCm/aiter#5452, fixed by #5476)",
       .plant = [](model_config& c) {
         c.corrupt_inputs = [](owned_problem& p) {
           recast_for_gfx942(p, keeping_nan(fp8::rules(fp8::recast_id::flydsl)), pack_recombine::sign_extended);
         };
       }},
      {.name = "mutant-fnuz-scrub-0x81", .bug_class = "BUGCLASSES 23", .must_produce = {"error-bound"},
       .description = "fn -> fnuz recast that scrubs -0 (0x80) to 0x81, e4m3fnuz's smallest negative subnormal, not 0",
       .plant = [](model_config& c) {
         c.corrupt_inputs = [](owned_problem& p) {
           recast_for_gfx942(p, scrubbing_negative_zero_to(keeping_nan(fp8::rules(fp8::recast_id::flydsl)), 0x81));
         };
       }},
      {.name = "mutant-bf16-as-fp32", .bug_class = "BUGCLASSES 6", .must_produce = {"error-bound"},
       .description = "bf16 dot products in a kernel that declares float32",
       .plant = [](model_config& c) { c.dot = dot_accumulator::bf16; }},
      {.name = "mutant-fp22-as-fp32", .bug_class = "BUGCLASSES 7", .must_produce = {"error-bound"},
       .description = "fp8 MMA accumulation never promoted to float32, declared float32",
       .plant = [](model_config& c) { c.dot = dot_accumulator::fp22_truncated; }},
      {.name = "mutant-scale-before-relu", .bug_class = "BUGCLASSES 8", .must_produce = {"error-bound", "scale-factor"},
       .description = "k_scale folded into the dot before relu: wrong wherever k_scale < 0",
       .plant = [](model_config& c) { c.scale = bounds::scale_placement::before_relu; }},
      {.name = "mutant-weights-transposed", .bug_class = "BUGCLASSES 9", .must_produce = {"error-bound"},
       .description = "weights [M, H] read as [H, M]",
       .plant = [](model_config& c) { c.corrupt_inputs = transpose_weights; }},
      {.name = "mutant-inclusive-end", .bug_class = "BUGCLASSES 11", .must_produce = {"mask-shift"},
       .description = "ke read as inclusive: key ke is written",
       .plant = [](model_config& c) { c.window_of = inclusive_end_window; }},
      {.name = "mutant-zero-fill", .bug_class = "BUGCLASSES 12", .must_produce = {"mask-leak"},
       .description = "clean_logits not honoured: 0 outside the window outranks negative logits",
       .plant = [](model_config& c) { c.outside = outside_fill::zero; }},
      {.name = "mutant-skip-empty-rows", .bug_class = "BUGCLASSES 13", .must_produce = {"unwritten"},
       .description = "rows with ks == ke return early and are never written",
       .plant = [](model_config& c) { c.skip_empty_rows = true; }},
      {.name = "mutant-ks-aligned-down", .bug_class = "BUGCLASSES 14", .must_produce = {"mask-leak"},
       .description = "ks aligned down to a multiple of 4 without cleaning the gap",
       .plant = [](model_config& c) {
         c.window_of = [](const exact::problem& p, std::int64_t i) { return aligned_down_window(p, i, 4); };
       }},
      {.name = "mutant-unsigned-window", .bug_class = "BUGCLASSES 15", .must_produce = {"mask-hole"},
       .description = "window bounds read as uint32: ks = -1 becomes 4294967295 and the row goes dark",
       .plant = [](model_config& c) { c.window_of = unsigned_window; }},
      {.name = "mutant-tail-tile", .bug_class = "BUGCLASSES 16", .must_produce = {"unwritten"},
       .description = "the last partial 64-column tile is never stored when N % 64 != 0",
       .plant = [](model_config& c) { c.tail_block = 64; }},
      {.name = "mutant-offset-overflow", .bug_class = "BUGCLASSES 17 (simulated)", .must_produce = {"unwritten"},
       .description = "byte offsets wrap at 2^17 (a 32-bit offset scaled down so a small case reaches it)",
       .plant = [](model_config& c) { c.offset_limit_bytes = std::int64_t{1} << 17; }},
      {.name = "mutant-previous-row-window", .bug_class = "BUGCLASSES 19", .must_produce = {"mask-leak", "mask-hole"},
       .description = "cu_seqlen indexing off by one: each row uses the previous row's window",
       .plant = [](model_config& c) { c.window_of = previous_row_window; }},
      // On a causal layout the next row's window is the row's own with its end one later: there it
      // is an inclusive end, the mask-shift finding.
      {.name = "mutant-next-row-window", .bug_class = "BUGCLASSES 19",
       .must_produce = {"mask-leak", "mask-hole", "mask-shift"},
       .description = "cu_seqlen indexing off by one the other way: each row but the last uses the next row's window",
       .plant = [](model_config& c) { c.window_of = next_row_window; }},
      {.name = "mutant-race", .bug_class = "BUGCLASSES 20", .must_produce = {"nondeterministic"},
       .description = "head-sum order depends on the launch, as an unsynchronised reduction does",
       .plant = [](model_config& c) { c.head_order_varies = true; }},

      // bf16 logits, fp4 block scales and relative columns (cases/bugs/27-29).
      {.name = "mutant-bf16-rounded-twice", .bug_class = "bf16 logits", .must_produce = {"error-bound"},
       .description = "bf16 logits rounded twice: the head sum kept in bfloat16, then times k_scale, rounded again",
       .plant = [](model_config& c) {
         c.logits = bounds::logits_precision::bf16;
         c.head_sum_to_bf16 = true;
       },
       .declared = with_bf16_logits(declared_arithmetic(dot_accumulator::fp32)), .prefill_only = true},
      // Both operations: a paged fp4 cache's keys reach the model with their block scales (paged.hpp).
      // Its bug lives in block scales: a case without them cannot show it (cases/bugs/29 has them).
      {.name = "mutant-fp4-scale-per-token", .bug_class = "fp4 block scales",
       .must_produce = {"error-bound", "scale-factor"},
       .description = "e2m1fn inputs scaled per token (the first 32-block's ue8m0 scale for the whole token) instead "
                      "of per 32-block",
       .plant = [](model_config& c) { c.fp4_scale_per_token = true; },
       .refuses = [](const exact::problem& p) -> std::optional<std::string> {
         if (!exact::uses_block_scales(p.q_format) && !exact::uses_block_scales(p.k_format))
           return std::string("plants its bug in e2m1fn block scales; this case has no e2m1fn operand");
         return std::nullopt;
       }},
      // relative_columns left off: key j lands at column j.
      {.name = "mutant-relative-as-absolute", .bug_class = "relative columns",
       .must_produce = {"unwritten", "error-bound"},
       .description = "asked for relative columns (max_seqlen_k > 0), writes key j at column j: every row whose window "
                      "starts past 0 is shifted",
       .plant = [](model_config& c) { c.outside = outside_fill::nothing; },
       .declared = with_relative_columns(declared_arithmetic(dot_accumulator::fp32)), .prefill_only = true},

      // The decode path's planted bugs, each in cases/bugs/ with a suite of its own.
      {.name = "mutant-paged-block-offset32", .bug_class = "paged decode: 32-bit block offset (simulated)",
       .must_produce = {"error-bound"},
       .description = "block byte offsets overflow at 2^16 (int32's 2^31 scaled down so a small cache reaches it): "
                      "blocks past it read zeros, as an AMD buffer load does (ROCm/aiter#4774, vllm#52109)",
       .read = [](paged_reading& r) { r.block_offset_overflows_at = std::int64_t{1} << 16; }},
      {.name = "mutant-paged-interleaved-scales", .bug_class = "paged decode: scale layout",
       .must_produce = {"error-bound", "nan", "inf"},
       .description = "each key read as [head_dim codes][float32 scale] at slot x (head_dim + 4), not the block's "
                      "codes then its scales (vllm#40991, #50576)",
       .read = [](paged_reading& r) { r.scales_interleaved = true; }},
      {.name = "mutant-paged-window-without-next-n", .bug_class = "paged decode: next_n masking",
       .must_produce = {"mask-leak", "mask-shift"},
       .description = "1-D context lengths masked as k <= L - t instead of k <= L - next_n + t (ROCm/aiter#4290)",
       .read = [](paged_reading& r) { r.window = paged_window::without_next_n; }},
      {.name = "mutant-paged-logical-blocks", .bug_class = "paged decode: block table ignored",
       .must_produce = {"error-bound"},
       .description = "logical block i read as physical block i: the block table is ignored",
       .read = [](paged_reading& r) { r.logical_blocks = true; }},
      {.name = "mutant-paged-shared-context-length", .bug_class = "paged decode: one length per request",
       .must_produce = {"mask-leak", "mask-shift"},
       .description = "every row of a request masked with its last row's context length (the one the scheduler "
                      "reads), not its own",
       .read = [](paged_reading& r) { r.window = paged_window::last_row; }},
  };
  return table;
}

// The indexer's second stage (topk.hpp) behind the fp32-naive model: a correct one, then one planted
// bug per top-k index finding class (cases/bugs/32-topk-indices.toml). Its convention: absolute keys,
// descending (torch.topk's order), -1 padding (as vLLM's top_k_per_row_prefill pads; that one
// writes keys relative to ks, in no promised order).
struct planted_topk {
  std::string_view name;
  std::vector<std::string> must_produce;  // classes, any one of which catches it; empty: the correct kernel
  std::string_view description;
  topk_config config;
};

const std::vector<planted_topk>& planted_topk_kernels() {
  static const std::vector<planted_topk> table{
      {.name = "fp32-topk", .must_produce = {},
       .description = "an indexer: the fp32-naive logits, then each window's k largest as absolute keys, "
                      "descending, -1 padded", .config = {}},
      {.name = "mutant-topk-duplicate", .must_produce = {"topk-duplicate"},
       .description = "the last selected slot repeats the first key", .config = {.duplicate_first = true}},
      {.name = "mutant-topk-one-past-end", .must_produce = {"topk-outside-window"},
       .description = "the window read as [ks, ke]: key ke selected where the window is shorter than k",
       .config = {.one_past_end = true}},
      {.name = "mutant-topk-relative-as-absolute", .must_produce = {"topk-outside-window"},
       .description = "keys written relative to ks (DeepGEMM's max_seqlen_k columns) where absolute ones are declared",
       .config = {.relative_as_absolute = true}},
      {.name = "mutant-topk-no-padding", .must_produce = {"topk-padding"},
       .description = "short windows: the slots past the window hold key ks instead of -1",
       .config = {.no_padding = true}},
      // Keys bfloat16 ties are ranked by index: a higher key dropped (at the k-th place) or listed
      // after a lower one (inside the top k), whichever the row shows.
      {.name = "mutant-topk-bf16-ranked", .must_produce = {"topk-inadmissible", "topk-unsorted"},
       .description = "the top-k taken on the logits rounded to bfloat16: near keys tie and the lower index wins",
       .config = {.bf16_ranked = true}},
      // Dropped where the window holds more than k keys, listed last where the top k is the window.
      {.name = "mutant-topk-nan-lowest", .must_produce = {"topk-inadmissible", "topk-unsorted"},
       .description = "a NaN logit ranked below -inf instead of highest, as torch.topk ranks it (vllm#49896's NaN "
                      "rows)",
       .config = {.nan_lowest = true}},
      {.name = "mutant-topk-ascending", .must_produce = {"topk-unsorted"},
       .description = "the selected keys written in ascending order of value where descending is promised",
       .config = {.ascending = true}},
  };
  return table;
}

variant indexer_of(const planted_topk& t) {
  variant v = model_variant(std::string(t.name), std::string(t.description), declared_arithmetic(dot_accumulator::fp32),
                            {});
  if (!t.must_produce.empty()) {
    v.must_produce = t.must_produce;
    v.bug_class = "top-k indices";
  }
  v.topk = topk_stage{.convention = {.columns = columns_layout::absolute, .sorted = true},
                      .select = [config = t.config](const exact::problem& p, const output_view& logits,
                                                    const indices_view& out) { select_topk(config, p, logits, out); }};
  return v;
}

variant variant_of(const planted_mutant& m) {
  if (m.read) {
    paged_reading reading;
    m.read(reading);
    return paged_mutant(std::string(m.name), std::string(m.bug_class), m.must_produce, std::string(m.description),
                        reading);
  }
  model_config config = m.into;
  m.plant(config);
  variant v = mutant(std::string(m.name), std::string(m.bug_class), m.must_produce, std::string(m.description),
                     std::move(config), m.declared);
  if (m.refuses) v.refuses = m.refuses;
  return m.prefill_only ? prefill_only(std::move(v)) : v;
}

}  // namespace

std::vector<variant> cpu_variants() {
  std::vector<variant> all;
  all.push_back(exact_variant());
  for (const auto& m : arithmetic_models()) {
    all.push_back(model_variant(m.name, m.description, m.declared, m.config));
    all.back().refuses = m.refuses;
  }
  // bf16 logits: DeepGEMM's logits_dtype = torch.bfloat16.
  all.push_back(exact_variant(bounds::logits_precision::bf16));
  all.push_back(prefill_only(model_variant("bf16-logits",
                                           "float32 arithmetic, heads in 4 lanes each scaled by k_scale (DeepGEMM "
                                           "sm90), the result stored as bfloat16",
                                           with_bf16_logits(declared_arithmetic(dot_accumulator::fp32)),
                                           with([](model_config& c) {
                                             c.logits = bounds::logits_precision::bf16;
                                             c.head_lanes = 4;
                                           }))));
  // Relative columns: DeepGEMM with max_seqlen_k > 0 and clean_logits = False.
  all.push_back(prefill_only(model_variant("fp32-relative",
                                           "float32, key ks[i] + c of row i at column c (DeepGEMM's max_seqlen_k), "
                                           "nothing written outside the windows",
                                           with_relative_columns(declared_arithmetic(dot_accumulator::fp32)),
                                           with([](model_config& c) {
                                             c.relative_columns = true;
                                             c.outside = outside_fill::nothing;
                                           }))));
  for (const planted_mutant& m : planted_mutants()) all.push_back(variant_of(m));
  for (const planted_topk& t : planted_topk_kernels()) all.push_back(indexer_of(t));
  return all;
}

}  // namespace mqa::kernels::cpu
