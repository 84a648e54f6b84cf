#include "operation.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "paged_sample.hpp"
#include "reference/fp8/format.hpp"

namespace mqa::diagnose {
namespace {

using kernels::cpu::model_config;
using kernels::cpu::outside_fill;

// -x as a code of the same format: the sign bit flipped, except where that names another value
// (0x00 to 0x80 is NaN in the fnuz formats, which have no -0; their NaN 0x80 stays NaN).
std::uint8_t negated(fp8::format f, std::uint8_t code) {
  const fp8::format_traits& t = fp8::traits(f);
  if ((code & fp8::magnitude_mask(t)) == 0 && !fp8::has_negative_zero(t)) return code;
  return static_cast<std::uint8_t>(code ^ fp8::sign_bit(t));
}

bool has_output_side_bug(const model_config& base, const model_config& planted) {
  return planted.outside != base.outside || planted.skip_empty_rows != base.skip_empty_rows ||
         planted.tail_block != base.tail_block || planted.offset_limit_bytes != base.offset_limit_bytes ||
         planted.head_order_varies != base.head_order_varies;
}

}  // namespace

std::optional<edited_operation> materialize(const model_config& base, const model_config& planted,
                                            const exact::problem& p, const kernels::contract& declared,
                                            const std::function<void(kernels::contract&)>& declare) {
  if (has_output_side_bug(base, planted)) return std::nullopt;
  edited_operation op{std::make_unique<kernels::cpu::owned_problem>(p), declared, false};
  kernels::cpu::owned_problem& e = *op.problem;
  const auto at = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  if (planted.corrupt_inputs) {
    planted.corrupt_inputs(e);
    e.refresh_view();
    op.inputs_edited = true;
  }
  if (planted.window_of) {
    std::vector<std::int32_t> ks(e.ks.size()), ke(e.ke.size());
    for (std::int64_t i = 0; i < e.view.m; ++i) {
      const exact::window w = planted.window_of(e.view, i);
      const auto begin = std::clamp<std::int64_t>(w.begin, 0, e.view.n);
      ks[at(i)] = static_cast<std::int32_t>(begin);
      ke[at(i)] = static_cast<std::int32_t>(std::clamp<std::int64_t>(w.end, begin, e.view.n));
    }
    e.ks = std::move(ks);
    e.ke = std::move(ke);
    op.inputs_edited = true;
  }
  if (planted.dropped_head != base.dropped_head && planted.dropped_head >= 0) {
    const std::int64_t h = std::min(planted.dropped_head, e.view.heads - 1);
    for (std::int64_t i = 0; i < e.view.m; ++i) e.weights[at(i * e.view.heads + h)] = 0.0f;
    op.inputs_edited = true;
  }
  if (planted.dot_length != base.dot_length) {
    const std::int64_t d_count = e.view.head_dim;
    const std::int64_t length =
        planted.dot_length > 0 ? planted.dot_length : std::max<std::int64_t>(d_count + planted.dot_length, 0);
    for (std::size_t row = 0; row < e.q.size() / at(d_count); ++row)
      for (std::int64_t d = length; d < d_count; ++d) e.q[row * at(d_count) + at(d)] = 0x00;
    op.inputs_edited = true;
  }
  if (planted.weight_factor != base.weight_factor) {
    for (auto& w : e.weights) w *= planted.weight_factor;
    op.inputs_edited = true;
  }
  if (planted.scale_factor != base.scale_factor) {
    for (auto& s : e.k_scale) s *= planted.scale_factor;
    op.inputs_edited = true;
  }
  if (planted.scale != base.scale) {
    if (planted.scale != bounds::scale_placement::before_relu) {
      op.contract.scale = planted.scale;
    } else {
      const auto d_count = at(e.view.head_dim);
      for (std::size_t j = 0; j < e.k_scale.size(); ++j) {
        if (!(e.k_scale[j] < 0)) continue;
        e.k_scale[j] = -e.k_scale[j];
        for (std::size_t d = 0; d < d_count; ++d) e.k[j * d_count + d] = negated(e.view.k_format, e.k[j * d_count + d]);
      }
      op.inputs_edited = true;
    }
  }
  if (planted.relu != base.relu) op.contract.relu = planted.relu;
  const bool to_bf16 = planted.dot_to_bf16 && !base.dot_to_bf16;
  if (planted.dot != base.dot || to_bf16) {
    const kernels::contract fresh = kernels::declared_arithmetic(to_bf16 ? bounds::dot_accumulator::bf16 : planted.dot);
    op.contract.dot = fresh.dot;
    op.contract.heads = fresh.heads;
    op.contract.promote_every = bounds::is_modelled(fresh.dot) ? planted.promote_every : 0;
  }
  if (declare) declare(op.contract);
  e.refresh_view();
  return op;
}

std::optional<edited_sample> materialize_sample(const model_config& base, const model_config& planted,
                                                const kernels::cpu::paged_reading& reading, const exact::problem& p,
                                                const paged::problem* paged, const cut::selection& at,
                                                const kernels::contract& declared,
                                                const std::function<void(kernels::contract&)>& declare) {
  if (!paged) {
    std::optional<edited_operation> op = materialize(base, planted, p, declared, declare);
    if (!op) return std::nullopt;
    return edited_sample{judged_problem::dense(cut::cut_problem(op->problem->view, at)), op->contract, op->inputs_edited};
  }
  edited_sample out{{}, declared, reading != kernels::cpu::paged_reading{}};
  std::vector<cut::problem> cuts;
  for (const request_rows& g : group_by_request(*paged, at.rows)) {
    const kernels::cpu::owned_problem as_read = kernels::cpu::read_request(reading, *paged, g.request);
    std::optional<edited_operation> op = materialize(base, planted, as_read.view, declared, declare);
    if (!op) return std::nullopt;
    cuts.push_back(cut_request(op->problem->view, g, at));
    out.contract = op->contract;
    out.inputs_edited |= op->inputs_edited;
  }
  out.problem = judged_problem::by_request(std::move(cuts));
  return out;
}

std::string flags_for(const kernels::contract& from, const kernels::contract& to) {
  std::string flags;
  auto add = [&](std::string flag) { flags += (flags.empty() ? "" : " ") + flag; };
  if (to.dot != from.dot) add(fmt::format("--accumulate {}", bounds::to_string(to.dot)));
  if (to.promote_every != from.promote_every && to.promote_every > 0)
    add(fmt::format("--promote-every {}", to.promote_every));
  if (to.scale != from.scale) add(fmt::format("--scale {}", bounds::to_string(to.scale)));
  if (to.relu != from.relu) add(fmt::format("--relu {}", exact::to_string(to.relu)));
  return flags;
}

}  // namespace mqa::diagnose
