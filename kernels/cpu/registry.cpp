#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model.hpp"
#include "reference/fp8/convert.hpp"
#include "reference/mma/instruction.hpp"

namespace mqa::kernels::cpu {
namespace {

using bounds::dot_accumulator;

variant model_variant(std::string name, std::string description, contract declared, model_config config) {
  return {std::move(name), std::move(description), declared, {}, "",
          [config](const exact::problem& p, const output_view& out, int run_index) {
            return run_model(config, p, out, run_index);
          },
          {}};
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

bool is_ocp_e4m3(fp8::format f) { return f == fp8::format::e4m3fn; }

contract sm90_contract() { return declared_arithmetic(dot_accumulator::sm90_wgmma); }

// vLLM's normalize_e4m3fn_to_e4m3fnuz on ROCm: keep the bytes, read them as fnuz (half the
// value) and double the scales; the correct version also turns 0x80 (-0, NaN in fnuz) into 0.
void normalize_to_fnuz(owned_problem& p, bool zero_the_0x80, bool fix_nan_bytes) {
  auto fix = [&](std::vector<std::uint8_t>& codes) {
    for (auto& c : codes) {
      if (zero_the_0x80 && c == 0x80) c = 0x00;
      if (fix_nan_bytes && (c == 0x7F || c == 0xFF)) c = 0x80;
    }
  };
  if (is_ocp_e4m3(p.view.q_format)) {
    fix(p.q);
    p.view.q_format = fp8::format::e4m3fnuz;
    for (auto& w : p.weights) w *= 2;  // q's per-token scale lives in the weights
  }
  if (is_ocp_e4m3(p.view.k_format)) {
    fix(p.k);
    p.view.k_format = fp8::format::e4m3fnuz;
    for (auto& s : p.k_scale) s *= 2;
  }
  p.refresh_view();
}

}  // namespace

std::vector<variant> cpu_variants() {
  std::vector<variant> all;
  all.push_back(exact_variant());
  all.push_back(model_variant("fp32-naive", "float32 dot products and head sum, left to right (a torch fp32 einsum)",
                              declared_arithmetic(dot_accumulator::fp32), {}));
  // bf16 logits (issue 14): DeepGEMM's logits_dtype = torch.bfloat16.
  all.push_back(exact_variant(bounds::logits_precision::bf16));
  {
    model_config c;
    c.logits = bounds::logits_precision::bf16;
    c.head_lanes = 4;
    all.push_back(model_variant("bf16-logits",
                                "float32 arithmetic, heads in 4 lanes each scaled by k_scale (DeepGEMM sm90), the "
                                "result stored as bfloat16",
                                with_bf16_logits(declared_arithmetic(dot_accumulator::fp32)), c));
  }
  {
    // Relative columns (issue 14): DeepGEMM with max_seqlen_k > 0 and clean_logits = False.
    model_config c;
    c.relative_columns = true;
    c.outside = outside_fill::nothing;
    all.push_back(model_variant("fp32-relative",
                                "float32, key ks[i] + c of row i at column c (DeepGEMM's max_seqlen_k), nothing "
                                "written outside the windows",
                                with_relative_columns(declared_arithmetic(dot_accumulator::fp32)), c));
  }
  {
    model_config c;
    c.dot_chunk = 16;
    c.pairwise_heads = true;
    all.push_back(model_variant("fp32-blocked",
                                "float32 in 16-wide chunks as MFMA accumulates, heads summed as a tree",
                                declared_arithmetic(dot_accumulator::fp32), c));
  }
  {
    model_config c;
    c.dot = dot_accumulator::fp22_truncated;
    all.push_back(model_variant("fp22-truncated",
                                "Hopper fp8 MMA without promotion: 13 fraction bits, truncated, per addition",
                                declared_arithmetic(dot_accumulator::fp22_truncated), c));
  }
  {
    model_config c;
    c.dot = dot_accumulator::bf16;
    all.push_back(model_variant("bf16-dot", "float32 dot products rounded to bfloat16 before relu (a bf16 einsum)",
                                declared_arithmetic(dot_accumulator::bf16), c));
  }
  {
    model_config c;
    c.relu = exact::relu_rule::fmax;
    all.push_back(model_variant("fp32-fmax", "float32, relu as fmaxf / tl.maximum: a NaN dot becomes 0",
                                declared_arithmetic(dot_accumulator::fp32, exact::relu_rule::fmax), c));
  }

  // Kernels on the matrix units, modelled bit for bit (reference/mma), judged under the model.
  {
    model_config c;
    c.dot = dot_accumulator::sm90_wgmma;
    c.head_lanes = 4;
    all.push_back(model_variant("sm90-wgmma",
                                "Hopper fp8 wgmma chained over D (13-bit truncating accumulator), heads in 4 "
                                "lanes each scaled by k_scale, as DeepGEMM's sm90 kernel reduces",
                                sm90_contract(), c));
  }
  {
    model_config c;
    c.dot = dot_accumulator::sm90_wgmma;
    c.promote_every = 32;
    c.scale = bounds::scale_placement::into_weights;
    contract declared = sm90_contract();
    declared.promote_every = 32;
    all.push_back(model_variant("sm90-wgmma-promoted",
                                "Hopper fp8 wgmma with every 32-element chain promoted into float32 (DeepGEMM's "
                                "GEMMs), k_scale folded into the weights",
                                declared, c));
  }
  {
    model_config c;
    c.dot = dot_accumulator::gfx942_mfma;
    c.pairwise_heads = true;
    contract declared = declared_arithmetic(dot_accumulator::gfx942_mfma);
    all.push_back(model_variant("gfx942-mfma",
                                "CDNA3 v_mfma_f32_16x16x32_fp8_fp8 chained over D (model not validated on AMD "
                                "hardware), heads as a tree; fnuz formats only",
                                declared, c));
  }
  {
    // The gfx942 question (reference/bounds/README.md): the CDNA3 kernel declared plain float32.
    // Its directed roundings (floor) stay below the fp32 bound for head_dim >= 32; CI proves it
    // on every suite and 100 seeds of every layout.
    model_config c;
    c.dot = dot_accumulator::gfx942_mfma;
    c.pairwise_heads = true;
    variant v = model_variant("gfx942-mfma-as-fp32",
                              "the gfx942 MFMA kernel (model not validated on AMD hardware) declared float32",
                              declared_arithmetic(dot_accumulator::fp32), c);
    v.refuses = [](const exact::problem& p) -> std::optional<std::string> {
      return mma::why_unusable(mma::gfx942_mfma(), p.q_format, p.k_format, p.head_dim, 0);
    };
    all.push_back(std::move(v));
  }
  // The subtle bugs a loose bound lets through, each caught under the model's contract.
  {
    auto subtle = [&](std::string name, std::string description, auto plant) {
      model_config c;
      c.dot = dot_accumulator::sm90_wgmma;
      c.head_lanes = 4;
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
      if (is_ocp_e4m3(p.view.q_format)) p.view.q_format = fp8::format::e4m3fnuz;
      if (is_ocp_e4m3(p.view.k_format)) p.view.k_format = fp8::format::e4m3fnuz;
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
    c.corrupt_inputs = [](owned_problem& p) {
      // Requantize k for gfx942 with the OCP bound: scale = amax / 448, then cast to e4m3fnuz,
      // whose max is 240: the largest elements of every key overflow to NaN.
      const auto& values = fp8::decode_table(p.view.k_format);
      const fp8::conversion to_fnuz{fp8::format::e4m3fnuz, fp8::profile_id::torch, std::nullopt};
      for (std::int64_t j = 0; j < p.view.n; ++j) {
        double amax = 0;
        for (std::int64_t d = 0; d < p.view.head_dim; ++d)
          amax = std::max(amax, std::fabs(values[p.k[static_cast<std::size_t>(j * p.view.head_dim + d)]] *
                                          static_cast<double>(p.k_scale[static_cast<std::size_t>(j)])));
        const double scale = amax > 0 ? amax / 448.0 : 1.0;
        for (std::int64_t d = 0; d < p.view.head_dim; ++d) {
          auto& code = p.k[static_cast<std::size_t>(j * p.view.head_dim + d)];
          code = fp8::encode(to_fnuz, values[code] * p.k_scale[static_cast<std::size_t>(j)] / scale);
        }
        p.k_scale[static_cast<std::size_t>(j)] = static_cast<float>(scale);
      }
      p.view.k_format = fp8::format::e4m3fnuz;
      p.refresh_view();
    };
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
    c.corrupt_inputs = [](owned_problem& p) {
      const std::int64_t m = p.view.m, h = p.view.heads;
      std::vector<float> transposed(p.weights.size());
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t k = 0; k < h; ++k)
          transposed[static_cast<std::size_t>(i * h + k)] = p.weights[static_cast<std::size_t>(k * m + i)];
      p.weights = std::move(transposed);
      p.refresh_view();
    };
    all.push_back(mutant("mutant-weights-transposed", "BUGCLASSES 9", {"error-bound"},
                         "weights [M, H] read as [H, M]", c));
  }
  {
    model_config c;
    c.window_of = [](const exact::problem& p, std::int64_t i) {
      exact::window w = exact::clamped_window(p, i);  // clamped begin; the loop runs j <= ke
      w.end = std::min<std::int64_t>(static_cast<std::int64_t>(p.ke[static_cast<std::size_t>(i)]) + 1, p.n);
      return w;
    };
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
    c.window_of = [](const exact::problem& p, std::int64_t i) {
      exact::window w = exact::clamped_window(p, i);
      if (!w.empty()) w.begin &= ~std::int64_t{3};  // DeepGEMM aligns ks down to 4 ... and forgets the gap
      return w;
    };
    all.push_back(mutant("mutant-ks-aligned-down", "BUGCLASSES 14", {"mask-leak"},
                         "ks aligned down to a multiple of 4 without cleaning the gap", c));
  }
  {
    model_config c;
    c.window_of = [](const exact::problem& p, std::int64_t i) {
      const auto ks = static_cast<std::uint32_t>(p.ks[static_cast<std::size_t>(i)]);  // -1 padding read as ~4e9
      const auto ke = static_cast<std::uint32_t>(p.ke[static_cast<std::size_t>(i)]);
      exact::window w{static_cast<std::int64_t>(ks), std::min<std::int64_t>(ke, p.n)};
      return w;
    };
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
    c.window_of = [](const exact::problem& p, std::int64_t i) { return exact::clamped_window(p, i > 0 ? i - 1 : 0); };
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
    all.push_back(mutant("mutant-bf16-rounded-twice", "issue 14: bf16 logits", {"error-bound"},
                         "bf16 logits rounded twice: the head sum kept in bfloat16, then times k_scale, rounded again",
                         c, with_bf16_logits(declared_arithmetic(dot_accumulator::fp32))));
  }
  {
    model_config c;
    c.fp4_scale_per_token = true;
    variant v = mutant("mutant-fp4-scale-per-token", "issue 14: fp4 block scales", {"error-bound", "scale-factor"},
                       "e2m1fn inputs scaled per token (the first 32-block's ue8m0 scale for the whole token) "
                       "instead of per 32-block",
                       c);
    // Its bug lives in block scales: a case without them cannot show it (cases/bugs/23 has them).
    v.refuses = [](const exact::problem& p) -> std::optional<std::string> {
      if (p.q_block_scale.empty() && p.k_block_scale.empty())
        return std::string("plants its bug in e2m1fn block scales; this case has no e2m1fn operand");
      return std::nullopt;
    };
    all.push_back(std::move(v));
  }
  {
    model_config c;
    c.outside = outside_fill::nothing;  // relative_columns left off: key j lands at column j
    all.push_back(mutant("mutant-relative-as-absolute", "issue 14: relative columns", {"unwritten", "error-bound"},
                         "asked for relative columns (max_seqlen_k > 0), writes key j at column j: every row whose "
                         "window starts past 0 is shifted",
                         c, with_relative_columns(declared_arithmetic(dot_accumulator::fp32))));
  }
  return all;
}

}  // namespace mqa::kernels::cpu
