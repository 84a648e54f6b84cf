// `mqacheck shrink BUNDLE --logits OUT.npy [--kernel CMD] [contract flags] --out SMALL`: a failing
// bundle cut down to the smallest bundle that still shows the same finding class (validator/shrink),
// written as an ordinary bundle plus the kernel's output, small enough to attach to a bug report.
//
// Without --kernel the output is cut along with the inputs (rows and keys: a cut output has no
// values for fewer heads). With --kernel the kernel is re-run on every candidate through its adapter
// (validator/external, as `run --kernel`), so heads and head_dim are cut too, and the finding must
// show on the whole bundle first and again on the smallest candidate.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <xtensor/xadapt.hpp>

#include "commands.hpp"
#include "contract_options.hpp"
#include "interrupt_guard.hpp"
#include "judging.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "validator/activity.hpp"
#include "validator/external/scratch.hpp"
#include "validator/external/session.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/io/output_path.hpp"
#include "validator/runner/runner.hpp"
#include "validator/shrink/shrink.hpp"
#include "validator/shrink/shrunk_bundle.hpp"

namespace mqa::cli {
namespace {

namespace fs = std::filesystem;

struct shrink_options {
  std::string bundle_dir, logits, out, kernel, finding;
  double timeout_seconds = 300;
  contract_options declared;
  unsigned threads = 0;
};

const compare::finding* find(const compare::judgement& j, compare::finding_class c) {
  for (const auto& f : j.findings)
    if (f.kind == c) return &f;
  return nullptr;
}

output_file as_file(external::kernel_output& k) {
  output_file f;
  f.values = std::move(k.values);
  f.m = k.m, f.n = k.n, f.stride = k.stride;
  return f;
}

std::string shown_classes(const compare::judgement& j) {
  std::string list;
  for (const auto& f : j.findings) list += (list.empty() ? "" : ", ") + std::string(compare::to_string(f.kind));
  return list.empty() ? "none" : list;
}

// A kernel behind its adapter, run on candidate bundles.
class kernel_runner {
 public:
  kernel_runner(const shrink_options& o, const bundle::bundle& b)
      : scratch_(scratch_bytes(b)),
        session_({o.kernel, o.timeout_seconds, interrupt_guard::requested, o.threads, false}, scratch_.path()) {}

  external::case_outcome run(const bundle::bundle& b, const kernels::contract& c, unsigned threads) {
    const exact::problem p = inputs::problem_of(b.spec, b.inputs);
    exact::options eo;
    eo.relu = c.relu;
    eo.threads = threads;
    const exact::result judged = exact::compute(p, eo);
    const std::optional<exact::result> centre = runner::centre_for(c, p, judged, threads);
    return session_.run_case(b, p, nullptr, judged, centre ? &*centre : nullptr, c, true);
  }

  void finish() { session_.finish(); }

 private:
  static std::uintmax_t scratch_bytes(const bundle::bundle& b) {
    const auto m = static_cast<std::uintmax_t>(b.spec.m), n = static_cast<std::uintmax_t>(b.spec.n);
    const auto stride = static_cast<std::uintmax_t>(runner::padded_stride(b.spec.n));
    const auto inputs = m * b.spec.heads * b.spec.head_dim + n * b.spec.head_dim + 4 * (n + m * b.spec.heads + 2 * m);
    return (inputs + 4 * m * n + 8 * m * stride) * 5 / 4 + (1 << 20);
  }

  external::scratch_folder scratch_;
  external::session session_;
};

int shrink_command(const shrink_options& o) {
  kernels::contract c = o.declared.contract();
  std::optional<compare::finding_class> wanted;
  if (!o.finding.empty()) {
    wanted = names::parse(compare::kFindingClassNames, o.finding);
    if (!wanted)
      throw input_error(fmt::format("--finding '{}' is not a finding class (accepted: {})", o.finding,
                                    names::accepted(compare::kFindingClassNames)));
  }
  if (o.kernel.empty() && o.logits.empty())
    throw input_error("--logits is required without --kernel (the output to cut down along with the inputs)");
  // Before any work: --out must be a new folder; it is reserved now and appears whole at the end.
  if (io::resolve_output_folder("--out", o.out, {}).exists)
    throw input_error(fmt::format("{}: already exists (accepted: a new folder in an existing one; shrink never "
                                  "replaces anything)",
                                  o.out));
  bundle::bundle_writer writer("--out", o.out, false);

  const activity::scope doing(fmt::format("shrink {}", o.bundle_dir));
  const auto start = std::chrono::steady_clock::now();
  const bundle::bundle b = bundle::load_bundle(o.bundle_dir);
  if (b.inputs.paged)
    throw input_error(fmt::format("{}: a paged decode bundle (layout kind = \"paged\"); shrink cuts prefill bundles "
                                  "(accepted: a bundle of any other layout)",
                                  o.bundle_dir));
  // Issue 14's options: a cut of head_dim would split the 32-element blocks their scales cover, and
  // the cut output is written as float32 absolute columns.
  if (!b.inputs.q_block_scale.empty() || !b.inputs.k_block_scale.empty())
    throw input_error(fmt::format("{}: an fp4 bundle (e2m1fn with block scales); shrink cuts fp8 bundles (accepted: a "
                                  "bundle whose q_format and k_format are fp8)",
                                  o.bundle_dir));
  if (c.logits != bounds::logits_precision::fp32 || c.columns != kernels::columns_layout::absolute)
    throw input_error("shrink judges float32 outputs with absolute columns (accepted: --logits-dtype fp32 and "
                      "--columns absolute, the defaults)");
  if (!o.declared.mask()) c.mask = b.spec.clean_logits ? kernels::masking::clean : kernels::masking::dont_care;
  const exact::problem p = inputs::problem_of(b.spec, b.inputs);
  const references r = references_for(b, p, nullptr, c, o.threads, o.bundle_dir);

  // The output whose finding is kept: --logits, else the kernel's on the whole bundle (both launches).
  std::optional<output_file> given, given_repeat;
  std::string what = o.logits;
  if (!o.logits.empty()) given = read_output(o.logits, p.m, p.n);
  std::optional<interrupt_guard> guard;
  std::unique_ptr<kernel_runner> kernel;
  if (!o.kernel.empty()) {
    guard.emplace();
    kernel = std::make_unique<kernel_runner>(o, b);
    external::case_outcome whole = kernel->run(b, c, o.threads);
    if (!whole.judgement || !whole.output)
      throw input_error(fmt::format("the kernel (--kernel) could not be judged on {}: {}", o.bundle_dir, whole.error));
    if (!given) {
      given = as_file(*whole.output);
      if (whole.repeat) given_repeat = as_file(*whole.repeat);
      what = fmt::format("the kernel's output ({})", o.kernel);
    } else {
      const compare::judgement logits_j = judge_output(p, nullptr, r, c, b.spec.topk, given->view(), std::nullopt, false, o.threads);
      for (const auto& f : logits_j.findings)
        if ((!wanted || f.kind == *wanted) && !find(*whole.judgement, f.kind))
          throw input_error(fmt::format("the kernel (--kernel) does not reproduce {} on {}: its output shows {} (a "
                                        "flaky kernel, or --logits came from another one)",
                                        compare::to_string(f.kind), o.bundle_dir, shown_classes(*whole.judgement)));
    }
  }
  // Diagnosed here, on the whole output: a cut keeps little beyond the failing elements, too little
  // evidence to tell hypotheses apart.
  const compare::judgement original =
      judge_output(p, nullptr, r, c, b.spec.topk, given->view(),
                   given_repeat ? std::optional(given_repeat->view()) : std::nullopt, true, o.threads);
  if (original.findings.empty())
    throw input_error(fmt::format("nothing to shrink: {} passes on {} under {} (accepted: an output with a finding)",
                                  what, o.bundle_dir, kernels::describe(c)));
  // By default the first finding other than topk-mismatch, which follows from the others when they exist.
  const auto first = std::find_if(original.findings.begin(), original.findings.end(), [](const compare::finding& f) {
    return f.kind != compare::finding_class::topk_mismatch;
  });
  const compare::finding* target =
      wanted ? find(original, *wanted) : (first != original.findings.end() ? &*first : &original.findings.front());
  if (!target)
    throw input_error(fmt::format("--finding {}: {} shows no {} on {} (it shows {})", o.finding, what, o.finding,
                                  o.bundle_dir, shown_classes(original)));
  const compare::finding_class kind = target->kind;
  fmt::print("shrink: {} on {} shows {} x{}{}; cutting rows, keys{} while it does\n", what, o.bundle_dir,
             compare::to_string(kind), target->count,
             target->diagnosis ? " (diagnosis: " + target->diagnosis->sentence + ")" : "",
             kernel ? ", heads and head_dim" : "");
  std::fflush(stdout);

  // Each candidate: the finding class still shows on the cut.
  shrink::still_fails fails;
  if (kernel) {
    fails = [&](const cut::selection& s) {
      const cut::problem cut = cut::cut_problem(p, s);
      const bundle::bundle candidate = shrink::shrunk_bundle(b, s, cut, o.threads);
      const external::case_outcome out = kernel->run(candidate, c, o.threads);
      return out.judgement && find(*out.judgement, kind) != nullptr;
    };
  } else {
    fails = [&](const cut::selection& s) {
      const cut::problem cut = cut::cut_problem(p, s);
      const exact::problem view = cut.view();
      references cut_refs{cut::cut_result(r.judged, p.n, s.rows, s.keys), std::nullopt};
      if (r.centre) cut_refs.centre = cut::cut_result(*r.centre, p.n, s.rows, s.keys);
      std::vector<float> output = cut::cut_output(given->view(), s.rows, s.keys);
      const compare::judgement j = judge_output(view, nullptr, cut_refs, c, b.spec.topk, {output.data(), view.m, view.n, view.n},
                                                std::nullopt, false, o.threads);
      return find(j, kind) != nullptr;
    };
  }
  shrink::plan plan;
  plan.heads = plan.dims = kernel != nullptr;
  if (const mma::instruction* ins = bounds::traits(c.dot).model) plan.dim_group = std::max<std::int64_t>(ins->k, c.promote_every);
  plan.max_candidates = kernel ? 600 : 4000;
  plan.focus_row = target->first_row;
  const shrink::outcome kept = shrink::minimize(cut::selection::everything(p), fails, plan);

  // The smallest candidate, checked once more as `check` will see it.
  const cut::problem cut = cut::cut_problem(p, kept.kept);
  const bundle::bundle small = shrink::shrunk_bundle(b, kept.kept, cut, o.threads);
  const exact::problem small_p = inputs::problem_of(small.spec, small.inputs);
  output_file small_out;
  std::optional<output_file> small_repeat;  // launch 2, kept for a nondeterministic finding
  if (kernel) {
    external::case_outcome again = kernel->run(small, c, o.threads);
    kernel->finish();
    if (!again.judgement || !find(*again.judgement, kind) || !again.output)
      throw input_error(fmt::format("{} disappeared when the smallest candidate was run again ({}): the kernel's "
                                    "output is not reproducible, so there is nothing stable to attach",
                                    compare::to_string(kind),
                                    again.judgement ? "it shows " + shown_classes(*again.judgement) : again.error));
    small_out = as_file(*again.output);
    if (kind == compare::finding_class::nondeterministic && again.repeat) small_repeat = as_file(*again.repeat);
  } else {
    const std::vector<float> values = cut::cut_output(given->view(), kept.kept.rows, kept.kept.keys);
    small_out.values = xt::adapt(values, std::vector<std::size_t>{kept.kept.rows.size(), kept.kept.keys.size()});
    small_out.m = small_p.m, small_out.n = small_out.stride = small_p.n;
  }
  const references small_refs = references_for(small, small_p, nullptr, c, o.threads, o.out);
  const std::optional<kernels::output_view> repeat =
      small_repeat ? std::optional(small_repeat->view()) : std::nullopt;
  const compare::judgement small_j =
      judge_output(small_p, nullptr, small_refs, c, small.spec.topk, small_out.view(), repeat, true, o.threads);
  if (!find(small_j, kind))
    throw input_error(fmt::format("{} disappeared on the smallest candidate when it was judged whole (it shows {}): "
                                  "nothing written",
                                  compare::to_string(kind), shown_classes(small_j)));

  if (guard && interrupt_guard::requested()) throw external::interrupted_error();
  writer.write(small, [&](const fs::path& staging, const fs::path& shown) {
    io::write_npy(io::output_file{shown / "logits.npy", staging / "logits.npy"}, small_out.values);
    if (small_repeat) io::write_npy(io::output_file{shown / "repeat.npy", staging / "repeat.npy"}, small_repeat->values);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}: m {} -> {}, n {} -> {}, heads {} -> {}, head_dim {} -> {} ({} candidates in {:.1f} s{})\n", o.out,
             p.m, small_p.m, p.n, small_p.n, p.heads, small_p.heads, p.head_dim, small_p.head_dim, kept.candidates,
             seconds, kept.budget_ran_out ? "; the candidate budget ran out: smaller may exist" : "");
  fmt::print("  {}\n", small.spec.description);
  print_judgement(fmt::format("{}/logits.npy", o.out), small_j, small.spec.name, c);
  fmt::print("reproduce: mqacheck check {} --logits {}/logits.npy{}{}\n", o.out, o.out,
             small_repeat ? fmt::format(" --repeat {}/repeat.npy", o.out) : "",
             o.declared.flags().empty() ? "" : " " + o.declared.flags());
  return 0;
}

}  // namespace

void add_shrink_command(CLI::App& app) {
  auto o = std::make_shared<shrink_options>();
  CLI::App* cmd = app.add_subcommand(
      "shrink", "cut a failing bundle down to the smallest bundle that still shows the same finding class");
  cmd->add_option("BUNDLE", o->bundle_dir, "bundle folder (mqacheck gen, or an earlier shrink)")->required();
  cmd->add_option("--logits", o->logits,
                  "the kernel's failing output, float32 [M, N] or [M, S]: cut along with the inputs (required "
                  "without --kernel)");
  cmd->add_option("--kernel", o->kernel,
                  "re-run the kernel on every candidate: COMMAND starts its adapter, as for `run --kernel` "
                  "(docs/protocol.md); heads and head_dim are then cut too");
  cmd->add_option("--timeout", o->timeout_seconds, "with --kernel: seconds the adapter may take per request")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--finding", o->finding, "the finding class to keep (default: the output's first finding)");
  o->declared.add_to(*cmd);
  cmd->add_option("--out", o->out, "the small bundle to create, with the kernel's output as logits.npy")->required();
  cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
  cmd->callback([o] {
    try {
      exit_status() = shrink_command(*o);
    } catch (const external::interrupted_error&) {
      // The adapter was stopped, its scratch folder and the unfinished --out removed on the way out.
      std::fflush(stdout);
      fmt::print(stderr, "mqacheck: interrupted: the adapter was stopped; nothing written\n");
      interrupt_guard::reraise();
    }
  });
}

}  // namespace mqa::cli
