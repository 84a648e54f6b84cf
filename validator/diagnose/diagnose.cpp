#include "diagnose.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>

#include "hypotheses.hpp"
#include "kernels/cpu/registry.hpp"
#include "operation.hpp"
#include "paged_sample.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "sample.hpp"

namespace mqa::diagnose {
namespace {

using compare::finding_class;
using kernels::cpu::model_config;
using kernels::cpu::paged_reading;
using classes = std::set<finding_class>;

// Equal as a kernel's output: the same bits, or NaN both (any payload but the poison's).
bool same(float a, float b) {
  const auto x = std::bit_cast<std::uint32_t>(a), y = std::bit_cast<std::uint32_t>(b);
  if (x == y) return true;
  return std::isnan(a) && std::isnan(b) && x != compare::kPoisonBits && y != compare::kPoisonBits;
}

classes classes_of(const compare::judgement& j) {
  classes out;
  for (const auto& f : j.findings) out.insert(f.kind);
  return out;
}

std::map<finding_class, std::int64_t> counts_of(const compare::judgement& j) {
  std::map<finding_class, std::int64_t> out;
  for (const auto& f : j.findings) out[f.kind] = f.count;
  return out;
}

// The classes shown before and gone after, provided nothing new appeared and the classes left grew
// by no more elements than the gone ones held: a hypothesis that trades one finding for another
// explains neither. The elements it explains may show another bug of the kernel once judged
// against the edited operation (a window end read as inclusive, in a kernel whose dots are also
// too loose, brings its ke keys' error-bound elements); an edited operation whose exact logits are
// NaN nearly everywhere turns one error-bound element into thousands.
classes vanished(const classes& before, const std::map<finding_class, std::int64_t>& counts,
                 const compare::judgement& after) {
  const classes now = classes_of(after);
  if (!std::includes(before.begin(), before.end(), now.begin(), now.end())) return {};
  classes gone;
  std::set_difference(before.begin(), before.end(), now.begin(), now.end(), std::inserter(gone, gone.end()));
  std::int64_t explained = 0, grown = 0;
  for (const finding_class c : gone) explained += counts.at(c);
  for (const compare::finding& f : after.findings) grown += std::max<std::int64_t>(0, f.count - counts.at(f.kind));
  return grown <= explained ? gone : classes{};
}

// The correct models a kernel with this contract may be (registry.cpp), or one built from the
// contract when none declares it (a float32 model for an exact contract: the CPU model has no
// exact dot).
std::vector<model_config> bases_for(const compare::subject& e) {
  const kernels::contract& c = e.contract;
  std::vector<model_config> out = kernels::cpu::models_declaring(c, *e.problem);
  if (out.empty()) {
    model_config m;
    m.dot = c.dot == bounds::dot_accumulator::exact ? bounds::dot_accumulator::fp32 : c.dot;
    m.promote_every = bounds::is_modelled(m.dot) ? c.promote_every : 0;
    m.scale = c.scale;
    m.relu = c.relu;
    out.push_back(m);
  }
  return out;
}

struct model_run {
  std::vector<float> first;
  std::optional<std::vector<float>> second;  // launch 2, when the evidence has one
};

struct reproduction {
  classes explained;
  std::string remedy;  // flags the kernel would pass under, or empty
  bool contract_edited = false;
};

class engine {
 public:
  engine(const compare::subject& e, const sample& s) : e_(e), s_(s) {
    std::vector<float> kernel = s_.kernel;
    std::optional<std::vector<float>> repeat = s_.repeat;
    const compare::judgement baseline =
        judge_sample(e_, s_.problem, s_.reference, centre(), kernel, repeat ? &*repeat : nullptr, e_.contract);
    shown_ = classes_of(baseline);
    counts_ = counts_of(baseline);
  }

  const classes& shown() const { return shown_; }

  // The correct models in the order of their bit agreement with the kernel: the first is the one
  // within-bound edits are read against; bit-for-bit reproductions try each (a planted bug that
  // reorders the arithmetic may agree best with another model than the one it was planted into).
  void order_bases() {
    bases_ = bases_for(e_);
    if (bases_.size() == 1) return;
    std::vector<std::pair<std::int64_t, std::size_t>> agreement;
    for (std::size_t b = 0; b < bases_.size(); ++b) {
      const std::optional<model_run> run = run_model(bases_[b]);
      std::int64_t agree = -1;
      if (run)
        for (std::size_t x = 0; x < run->first.size(); ++x) agree += same(run->first[x], s_.kernel[x]);
      agreement.emplace_back(-agree, b);
    }
    std::stable_sort(agreement.begin(), agreement.end());
    std::vector<model_config> ordered;
    for (const auto& [_, b] : agreement) ordered.push_back(bases_[b]);
    bases_ = std::move(ordered);
  }
  const model_config& base() const { return bases_.front(); }

  // Bit for bit, planted into any of the correct models.
  reproduction bit_for_bit(std::size_t id, const candidate& c) {
    for (std::size_t b = 0; b < bases_.size(); ++b) {
      reproduction r = bit_for_bit(id, c, b);
      if (!r.explained.empty()) return r;
    }
    return {};
  }

  // Within the bound: judged against the exact value of the edited operation.
  reproduction within_bound(std::size_t id, const candidate& c) {
    if (!c.within_bound) return {};
    const std::optional<edited_sample> op = edit(c);
    if (!op) return {};
    reproduction r;
    r.explained = judged_as(*op, id, c, true);
    r.contract_edited = op->contract.dot != e_.contract.dot || op->contract.relu != e_.contract.relu ||
                        op->contract.scale != e_.contract.scale;
    if (!r.explained.empty() && !op->inputs_edited) r.remedy = flags_for(e_.contract, op->contract);
    return r;
  }

 private:
  // The kernel's output set to the centre wherever it equals the planted model's.
  reproduction bit_for_bit(std::size_t id, const candidate& c, std::size_t b) {
    const model_run* run = planted_run(id, c, b);
    if (!run) return {};
    const std::vector<float>& exact = s_.judged_centre().logits;
    auto patched = [&](std::vector<float> values, const std::vector<float>& model) {
      for (std::size_t x = 0; x < values.size(); ++x)
        if (same(values[x], model[x])) values[x] = exact[x];
      return values;
    };
    std::vector<float> kernel = patched(s_.kernel, run->first);
    std::optional<std::vector<float>> repeat;
    if (s_.repeat) repeat = patched(*s_.repeat, *run->second);
    reproduction r;
    r.explained = vanished(shown_, counts_,
                           judge_sample(e_, s_.problem, s_.reference, centre(), kernel, repeat ? &*repeat : nullptr,
                                        e_.contract));
    if (r.explained.empty()) return r;
    // And the other way round: the planted model, judged as a kernel, shows each of those classes
    // on exactly as many elements. A model that writes NaN (or nothing) everywhere matches every NaN
    // (or unwritten) element of any output, and predicts many the kernel does not have.
    std::vector<float> model = run->first;
    std::optional<std::vector<float>> model_repeat = run->second;
    const auto predicted = counts_of(judge_sample(e_, s_.problem, s_.reference, centre(), model,
                                                  model_repeat ? &*model_repeat : nullptr, e_.contract));
    std::erase_if(r.explained, [&](finding_class c) {
      const auto found = predicted.find(c);
      return found == predicted.end() || found->second != counts_.at(c);
    });
    if (r.explained.empty()) return r;
    // A bug the kernel could declare (its dot accumulator, its relu) earns the flags that say so,
    // when the whole output passes under them.
    const std::optional<edited_sample> op = edit(c, b);
    if (op && !op->inputs_edited) {
      const classes passes = judged_as(*op, id, c, false);
      if (std::includes(passes.begin(), passes.end(), r.explained.begin(), r.explained.end()))
        r.remedy = flags_for(e_.contract, op->contract);
    }
    return r;
  }

  const exact::result* centre() const { return s_.centre ? &*s_.centre : nullptr; }

  // The model on the sample; a paged reading other than the operation's only for a paged problem.
  std::optional<model_run> run_model(const model_config& c, const paged_reading& reading = {}) const {
    const exact::problem& p = *e_.problem;
    if (!e_.paged && reading != paged_reading{}) return std::nullopt;
    const kernels::output_view layout{nullptr, p.m, p.n, e_.output.stride};
    auto once = [&](int launch) {
      if (e_.paged) return run_on_sample(c, reading, *e_.paged, s_.at, e_.output.stride, launch);
      std::vector<float> values(s_.kernel.size(), std::bit_cast<float>(compare::kPoisonBits));
      const kernels::cpu::sampled_output only{s_.at.rows, s_.at.keys, values.data()};
      kernels::cpu::run_model(c, p, layout, launch, &only);
      return values;
    };
    try {
      model_run run{once(0), std::nullopt};
      if (s_.repeat) run.second = once(1);
      return run;
    } catch (const std::exception&) {
      return std::nullopt;  // the planted model cannot take this problem (an instruction's formats)
    }
  }

  const model_run* planted_run(std::size_t id, const candidate& c, std::size_t b = 0) {
    auto found = runs_.find({id, b});
    if (found == runs_.end()) {
      model_config planted = bases_[b];
      c.plant(planted);
      found = runs_.emplace(std::pair{id, b}, run_model(planted, reading_of(c))).first;
    }
    return found->second ? &*found->second : nullptr;
  }

  static paged_reading reading_of(const candidate& c) {
    paged_reading r;
    if (c.read) c.read(r);
    return r;
  }

  std::optional<edited_sample> edit(const candidate& c, std::size_t b = 0) const {
    model_config planted = bases_[b];
    c.plant(planted);
    const paged_reading reading = reading_of(c);
    if (!e_.paged && reading != paged_reading{}) return std::nullopt;
    try {
      return materialize_sample(bases_[b], planted, reading, *e_.problem, e_.paged, s_.at, e_.contract, c.declare);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // The classes that vanish when the sample is judged against the edited operation. A looser dot
  // accumulator must also be how the kernel computes: the planted model has to account for at
  // least half the kernel's distance to the exact logits, so that a loose bound cannot swallow an
  // unrelated bug and be named its cause.
  classes judged_as(const edited_sample& op, std::size_t id, const candidate& c, bool guard_looser) {
    try {
      const exact::problem view = op.problem.view();
      exact::options eo;
      eo.relu = op.contract.relu;
      eo.threads = e_.threads;
      const exact::result reference = op.problem.compute(eo);
      std::optional<exact::result> centre;
      if (const mma::instruction* model = bounds::traits(op.contract.dot).model) {
        if (mma::why_unusable(*model, view.q_format, view.k_format, view.head_dim, op.contract.promote_every)) return {};
        eo.dot_model = model;
        eo.promote_every = op.contract.promote_every;
        centre = op.problem.compute(eo);
      }
      std::vector<float> kernel = s_.kernel;
      std::optional<std::vector<float>> repeat = s_.repeat;
      const classes gone = vanished(shown_, counts_,
                                    judge_sample(e_, op.problem, reference, centre ? &*centre : nullptr, kernel,
                                                 repeat ? &*repeat : nullptr, op.contract));
      if (gone.empty() || !guard_looser || op.contract.dot == e_.contract.dot) return gone;
      const model_run* run = planted_run(id, c);
      if (!run || !accounts_for_deviation(run->first)) return {};
      return gone;
    } catch (const std::exception&) {
      return {};
    }
  }

  bool accounts_for_deviation(const std::vector<float>& model) const {
    const std::vector<float>& exact = s_.judged_centre().logits;
    double to_model = 0, to_exact = 0;
    for (std::size_t x = 0; x < exact.size(); ++x) {
      const double k = s_.kernel[x], m = model[x], c = exact[x];
      if (!std::isfinite(k) || !std::isfinite(m) || !std::isfinite(c)) continue;
      to_model += std::fabs(k - m);
      to_exact += std::fabs(k - c);
    }
    return to_exact > 0 && to_model <= to_exact / 2;
  }

  const compare::subject& e_;
  const sample& s_;
  classes shown_;
  std::map<finding_class, std::int64_t> counts_;
  std::vector<model_config> bases_;
  std::map<std::pair<std::size_t, std::size_t>, std::optional<model_run>> runs_;
};

// "matches A, or equally B: would pass under --accumulate bf16 (reproduced bit for bit ...)".
std::string sentence(const std::vector<const candidate*>& equally, const reproduction& r, bool bit_for_bit,
                     const sample& s) {
  std::string what;
  for (const candidate* c : equally)
    what += (what.empty() ? "" : ", or equally ") +
            (bit_for_bit || c->what_within_bound.empty() ? c->what : c->what_within_bound);
  std::string remedy;
  if (r.remedy == "--relu fmax") remedy = ": declare --relu fmax";
  else if (!r.remedy.empty()) remedy = ": would pass under " + r.remedy;
  const std::string how = bit_for_bit ? "bit for bit"
                          : r.contract_edited ? "within the bound of that contract"
                                              : "within the declared bound";
  const std::string where = s.whole ? (s.at.rows.size() == 1 ? std::string("on its one row")
                                                               : fmt::format("on all {} rows", s.at.rows.size()))
                                    : fmt::format("on {} sampled rows x {} keys", s.at.rows.size(), s.at.keys.size());
  // An output NaN at every number of the sample is what many bugs write (memory never written by
  // a NaN fill, an overflow, a wrong dtype): a model that writes it too is one of them, not found out.
  bool all_nan = false;
  const std::vector<float>& exact = s.judged_centre().logits;
  for (std::size_t x = 0; x < exact.size() && x < s.kernel.size(); ++x) {
    if (!std::isfinite(exact[x])) continue;
    all_nan = std::isnan(s.kernel[x]);
    if (!all_nan) break;
  }
  return fmt::format("matches {}{} (reproduced {} by mqacheck's model {}){}", what, remedy, how, where,
                     all_nan ? "; but the output is NaN wherever the exact logits are numbers, as many bugs leave it "
                               "(memory never written, an overflow, a wrong dtype): this match does not tell them apart"
                             : "");
}

}  // namespace

bool diagnosable(const kernels::contract& c, const exact::problem& p) {
  return c.logits == bounds::logits_precision::fp32 && c.columns == kernels::columns_layout::absolute &&
         !exact::uses_block_scales(p.q_format) && !exact::uses_block_scales(p.k_format);
}

std::vector<std::int64_t> rows_needed(const compare::subject& e, const compare::judgement& j, const options& o) {
  if (j.findings.empty() || !diagnosable(e.contract, *e.problem)) return {};
  return select_sample(e, j, o.model_work).rows;
}

void explain(const compare::subject& e, compare::judgement& j, const options& o) {
  if (j.findings.empty() || !diagnosable(e.contract, *e.problem)) return;
  const sample s = take_sample(e, j, o.model_work);
  engine run(e, s);
  // What is left to explain: findings the sample shows. One element (a shrunk bundle's single NaN)
  // tells no hypothesis from another that writes such a value there: nothing is said from it.
  if (s.at.rows.size() * s.at.keys.size() < 2) return;
  std::map<finding_class, std::size_t> pending;
  for (std::size_t k = 0; k < j.findings.size(); ++k)
    if (!j.findings[k].diagnosis && run.shown().contains(j.findings[k].kind)) pending.emplace(j.findings[k].kind, k);
  if (pending.empty()) return;
  run.order_bases();

  const situation here{e, s, j, run.base()};
  struct entry {
    const hypothesis* h;
    candidate c;
  };
  std::vector<entry> table;
  for (const auto& h : hypotheses()) {
    const bool relevant = std::any_of(h.explains.begin(), h.explains.end(), [&](finding_class c) { return pending.contains(c); });
    if (!relevant) continue;
    for (auto& c : h.candidates(here)) table.push_back({&h, std::move(c)});
  }
  std::map<std::pair<bool, std::size_t>, reproduction> tried;
  auto reproduced = [&](bool bit_for_bit, std::size_t id) -> const reproduction& {
    auto found = tried.find({bit_for_bit, id});
    if (found == tried.end())
      found = tried.emplace(std::pair{bit_for_bit, id},
                            bit_for_bit ? run.bit_for_bit(id, table[id].c) : run.within_bound(id, table[id].c))
                  .first;
    return found->second;
  };
  // A changed top-k follows from whatever changed the values: it goes to the hypothesis that
  // explains a finding of another class where one does, and to any that explains it only after.
  auto primary = [](finding_class c) { return c != finding_class::topk_mismatch; };
  for (const bool bit_for_bit : {true, false}) {
    for (const bool primary_first : {true, false}) {
      for (std::size_t id = 0; id < table.size() && !pending.empty(); ++id) {
        const entry& t = table[id];
        if (std::none_of(t.h->explains.begin(), t.h->explains.end(), [&](finding_class c) { return pending.contains(c); }))
          continue;
        const reproduction r = reproduced(bit_for_bit, id);
        const bool explains_primary = std::any_of(r.explained.begin(), r.explained.end(),
                                                  [&](finding_class c) { return primary(c) && pending.contains(c); });
        if (primary_first && !explains_primary) continue;
        classes now;
        for (const finding_class c : r.explained)
          if (pending.contains(c)) now.insert(c);
        if (now.empty()) continue;
        // What the output cannot tell apart from it: the hypothesis's later candidates that
        // reproduce as much (q's bytes misread or k's: either halves every product).
        std::vector<const candidate*> equally{&t.c};
        for (std::size_t other = id + 1; other < table.size(); ++other) {
          if (table[other].h != t.h) continue;
          const classes& also = reproduced(bit_for_bit, other).explained;
          if (std::includes(also.begin(), also.end(), now.begin(), now.end())) equally.push_back(&table[other].c);
        }
        for (const finding_class c : now) {
          j.findings[pending.at(c)].diagnosis =
              compare::likely_cause{t.c.cause, bit_for_bit, sentence(equally, r, bit_for_bit, s)};
          pending.erase(c);
        }
      }
    }
  }
}

}  // namespace mqa::diagnose
