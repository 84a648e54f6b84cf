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
#include "api/contract_options.hpp"
#include "interrupt_guard.hpp"
#include "judging.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/names/names.hpp"
#include "reference/mma/instruction.hpp"
#include "validator/activity.hpp"
#include "validator/external/scratch.hpp"
#include "validator/external/session.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/io/output_path.hpp"
#include "validator/judge/bundle.hpp"
#include "validator/judge/judge.hpp"
#include "validator/runner/runner.hpp"
#include "validator/shrink/shrink.hpp"
#include "validator/shrink/shrunk_bundle.hpp"
#include "seconds_option.hpp"

namespace mqa::cli {
namespace {

namespace fs = std::filesystem;

struct shrink_options {
  std::string bundle_dir, logits, out, kernel, finding;
  double timeout_seconds = 300;
  api::contract_options declared;
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

// The judge on a whole output against references computed for it (validator/judge).
compare::judgement judge_output(const exact::problem& p, const judge::references& r, const kernels::contract& c,
                                std::optional<std::int64_t> topk, kernels::output_view output,
                                std::optional<kernels::output_view> repeat, bool diagnose, unsigned threads) {
  compare::subject s = compare::subject_of(p, nullptr, c, topk, output, threads);
  s.reference = &r.judged;
  s.centre = r.centre_or_null();
  s.repeat = repeat;
  return judge::judge(s, {.diagnose = diagnose, .launch_findings = {}});
}

// A kernel behind its adapter, run on candidate bundles.
class kernel_runner {
 public:
  kernel_runner(const shrink_options& o, const bundle::bundle& b)
      : scratch_(scratch_bytes(b)),
        session_({o.kernel, o.timeout_seconds, interrupt_guard::requested, o.threads, false, 0, std::nullopt},
                 scratch_) {}

  external::case_outcome run(const bundle::bundle& b, const kernels::contract& c, unsigned threads) {
    const exact::problem p = inputs::problem_of(b.spec, b.inputs);
    judge::reference_cache references(p, nullptr, {}, threads);
    return session_.run_case({b.suite_name, b.spec, b.inputs}, p, nullptr, references.reference(c), references.centre(c), c, true);
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

std::optional<compare::finding_class> wanted_class(const shrink_options& o) {
  if (o.finding.empty()) return std::nullopt;
  const auto wanted = names::parse(compare::kFindingClassNames, o.finding);
  if (!wanted)
    throw input_error(fmt::format("--finding '{}' is not a finding class (accepted: {})", o.finding,
                                  names::accepted(compare::kFindingClassNames)));
  return wanted;
}

// A bundle shrink can cut, refused otherwise with what it accepts.
void check_cuttable(const bundle::bundle& b, const kernels::contract& c, const std::string& bundle_dir) {
  if (b.inputs.paged)
    throw input_error(fmt::format("{}: a paged decode bundle (layout kind = \"paged\"); shrink cuts prefill bundles "
                                  "(accepted: a bundle of any other layout)",
                                  bundle_dir));
  // fp4 operands: a cut of head_dim would split the 32-element blocks their scales cover, and the
  // cut output is written as float32 absolute columns.
  if (!b.inputs.q_block_scale.empty() || !b.inputs.k_block_scale.empty())
    throw input_error(fmt::format("{}: an fp4 bundle (e2m1fn with block scales); shrink cuts fp8 bundles (accepted: a "
                                  "bundle whose q_format and k_format are fp8)",
                                  bundle_dir));
  if (c.logits != bounds::logits_precision::fp32 || c.columns != kernels::columns_layout::absolute)
    throw input_error("shrink judges float32 outputs with absolute columns (accepted: --logits-dtype fp32 and "
                      "--columns absolute, the defaults)");
}

// What a shrink starts from and cuts: the bundle, its problem, its references, and the output
// whose finding is kept.
struct shrink_job {
  const shrink_options& o;
  std::optional<compare::finding_class> wanted;
  kernels::contract c;
  bundle::bundle b;
  exact::problem p;
  judge::references r;
  std::unique_ptr<kernel_runner> kernel;  // with --kernel
  std::optional<output_file> given, given_repeat;
  std::string what;  // the output, as the messages name it

  compare::judgement judged(const exact::problem& on, const judge::references& refs, kernels::output_view output,
                            std::optional<kernels::output_view> repeat, bool diagnose) const {
    return judge_output(on, refs, c, b.spec.topk, output, repeat, diagnose, o.threads);
  }
};

// The kernel's output on the whole bundle (both launches), kept when --logits gives none; with
// --logits, the kernel must reproduce its findings.
void run_kernel_whole(shrink_job& job) {
  const shrink_options& o = job.o;
  external::case_outcome whole = job.kernel->run(job.b, job.c, o.threads);
  if (!whole.judgement || !whole.output)
    throw input_error(fmt::format("the kernel (--kernel) could not be judged on {}: {}", o.bundle_dir, whole.error));
  if (!job.given) {
    job.given = as_file(*whole.output);
    if (whole.repeat) job.given_repeat = as_file(*whole.repeat);
    job.what = fmt::format("the kernel's output ({})", o.kernel);
    return;
  }
  const compare::judgement logits_j = job.judged(job.p, job.r, job.given->view(), std::nullopt, false);
  for (const auto& f : logits_j.findings)
    if ((!job.wanted || f.kind == *job.wanted) && !find(*whole.judgement, f.kind))
      throw input_error(fmt::format("the kernel (--kernel) does not reproduce {} on {}: its output shows {} (a "
                                    "flaky kernel, or --logits came from another one)",
                                    compare::to_string(f.kind), o.bundle_dir, shown_classes(*whole.judgement)));
}

// The finding kept: --finding's class, by default the first finding other than topk-mismatch,
// which follows from the others when they exist.
const compare::finding& target_of(const shrink_job& job, const compare::judgement& original) {
  if (original.findings.empty())
    throw input_error(fmt::format("nothing to shrink: {} passes on {} under {} (accepted: an output with a finding)",
                                  job.what, job.o.bundle_dir, kernels::describe(job.c)));
  const auto first = std::find_if(original.findings.begin(), original.findings.end(), [](const compare::finding& f) {
    return f.kind != compare::finding_class::topk_mismatch;
  });
  const compare::finding* target = job.wanted ? find(original, *job.wanted)
                                              : (first != original.findings.end() ? &*first : &original.findings.front());
  if (!target)
    throw input_error(fmt::format("--finding {}: {} shows no {} on {} (it shows {})", job.o.finding, job.what,
                                  job.o.finding, job.o.bundle_dir, shown_classes(original)));
  return *target;
}

// Whether `j` still shows the target finding: its class, and for a mask-shift its shape, which
// cutting keys out of an overrun would change (a +4 overrun cut to +1 reads as an inclusive end,
// and would be diagnosed as one).
bool shows(const compare::judgement& j, const compare::finding& target) {
  const compare::finding* f = find(j, target.kind);
  return f != nullptr && (target.kind != compare::finding_class::mask_shift || f->shift == target.shift);
}

// Each candidate: the finding still shows on the cut (the kernel re-run on it, or the given output
// cut with the inputs).
shrink::still_fails still_fails(shrink_job& job, const compare::finding& target) {
  if (job.kernel)
    return [&job, target](const cut::selection& s) {
      const cut::problem cut = cut::cut_problem(job.p, s);
      const bundle::bundle candidate = shrink::shrunk_bundle(job.b, s, cut, job.o.threads);
      const external::case_outcome out = job.kernel->run(candidate, job.c, job.o.threads);
      return out.judgement && shows(*out.judgement, target);
    };
  return [&job, target](const cut::selection& s) {
    const cut::problem cut = cut::cut_problem(job.p, s);
    const exact::problem view = cut.view();
    judge::references cut_refs{cut::cut_result(job.r.judged, job.p.n, s.rows, s.keys), std::nullopt, {}};
    if (job.r.centre) cut_refs.centre = cut::cut_result(*job.r.centre, job.p.n, s.rows, s.keys);
    std::vector<float> output = cut::cut_output(job.given->view(), s.rows, s.keys);
    const compare::judgement j =
        job.judged(view, cut_refs, {output.data(), view.m, view.n, view.n}, std::nullopt, false);
    return shows(j, target);
  };
}

// The smallest candidate's bundle and the output to attach to it.
struct smallest {
  bundle::bundle bundle;
  output_file out;
  std::optional<output_file> repeat;  // launch 2, kept for a nondeterministic finding
};

smallest smallest_of(shrink_job& job, const cut::selection& kept, compare::finding_class kind) {
  const cut::problem cut = cut::cut_problem(job.p, kept);
  smallest small{shrink::shrunk_bundle(job.b, kept, cut, job.o.threads), {}, std::nullopt};
  if (job.kernel) {
    external::case_outcome again = job.kernel->run(small.bundle, job.c, job.o.threads);
    job.kernel->finish();
    if (!again.judgement || !find(*again.judgement, kind) || !again.output)
      throw input_error(fmt::format("{} disappeared when the smallest candidate was run again ({}): the kernel's "
                                    "output is not reproducible, so there is nothing stable to attach",
                                    compare::to_string(kind),
                                    again.judgement ? "it shows " + shown_classes(*again.judgement) : again.error));
    small.out = as_file(*again.output);
    if (kind == compare::finding_class::nondeterministic && again.repeat) small.repeat = as_file(*again.repeat);
  } else {
    const std::vector<float> values = cut::cut_output(job.given->view(), kept.rows, kept.keys);
    small.out.values = xt::adapt(values, std::vector<std::size_t>{kept.rows.size(), kept.keys.size()});
    small.out.m = static_cast<std::int64_t>(kept.rows.size());
    small.out.n = small.out.stride = static_cast<std::int64_t>(kept.keys.size());
  }
  return small;
}

int shrink_command(const shrink_options& o) {
  shrink_job job{o, wanted_class(o), o.declared.contract(), {}, {}, {}, nullptr, std::nullopt, std::nullopt, {}};
  if (o.kernel.empty() && o.logits.empty())
    throw input_error("--logits is required without --kernel (the output to cut down along with the inputs)");
  // Before any work: --out must be a new folder; it is reserved now and appears whole at the end.
  const io::output_folder out = io::resolve_output_folder("--out", o.out, {});
  if (out.exists)
    throw input_error(fmt::format("{}: already exists (accepted: a new folder in an existing one; shrink never "
                                  "replaces anything)",
                                  o.out));
  // Inside the bundle it would be a folder the bundle never had (gen --force then refuses the bundle).
  std::error_code ec;
  const fs::path bundle_at = fs::weakly_canonical(fs::absolute(o.bundle_dir), ec);
  for (fs::path p = out.target; !ec && p.has_relative_path() && p != p.parent_path(); p = p.parent_path())
    if (p == bundle_at)
      throw input_error(fmt::format("--out {}: is inside the bundle {} (accepted: a new folder outside the bundle)",
                                    o.out, o.bundle_dir));
  bundle::bundle_writer writer("--out", o.out, false);

  const activity::scope doing(fmt::format("shrink {}", o.bundle_dir));
  const auto start = std::chrono::steady_clock::now();
  job.b = bundle::load_bundle(o.bundle_dir);
  check_cuttable(job.b, job.c, o.bundle_dir);
  if (!o.declared.mask()) job.c.mask = job.b.spec.clean_logits ? kernels::masking::clean : kernels::masking::dont_care;
  job.p = inputs::problem_of(job.b.spec, job.b.inputs);
  job.r = judge::references_for(job.b, job.p, nullptr, job.c, o.threads, o.bundle_dir);
  // The output whose finding is kept: --logits, else the kernel's.
  job.what = o.logits;
  if (!o.logits.empty()) job.given = read_output(o.logits, job.p.m, job.p.n);
  std::optional<interrupt_guard> guard;
  if (!o.kernel.empty()) {
    guard.emplace();
    job.kernel = std::make_unique<kernel_runner>(o, job.b);
    run_kernel_whole(job);
  }
  // Diagnosed here, on the whole output: a cut keeps little beyond the failing elements, too little
  // evidence to tell hypotheses apart.
  const compare::judgement original = job.judged(
      job.p, job.r, job.given->view(), job.given_repeat ? std::optional(job.given_repeat->view()) : std::nullopt, true);
  const compare::finding& target = target_of(job, original);
  const compare::finding_class kind = target.kind;
  fmt::print("shrink: {} on {} shows {} x{}{}; cutting rows, keys{} while it does\n", job.what, o.bundle_dir,
             compare::to_string(kind), target.count,
             target.diagnosis ? " (diagnosis: " + target.diagnosis->sentence + ")" : "",
             job.kernel ? ", heads and head_dim" : "");
  std::fflush(stdout);

  shrink::plan plan;
  plan.heads = plan.dims = job.kernel != nullptr;
  if (const mma::instruction* ins = bounds::traits(job.c.dot).model)
    plan.dim_group = std::max<std::int64_t>(ins->k, job.c.promote_every);
  plan.max_candidates = job.kernel ? 600 : 4000;
  plan.focus_row = target.first_row;
  const shrink::outcome kept = shrink::minimize(cut::selection::everything(job.p), still_fails(job, target), plan);

  // The smallest candidate, checked once more as `check` will see it.
  smallest small = smallest_of(job, kept.kept, kind);
  const exact::problem small_p = inputs::problem_of(small.bundle.spec, small.bundle.inputs);
  const judge::references small_refs = judge::references_for(small.bundle, small_p, nullptr, job.c, o.threads, o.out);
  const compare::judgement small_j =
      job.judged(small_p, small_refs, small.out.view(), small.repeat ? std::optional(small.repeat->view()) : std::nullopt,
                 true);
  if (!shows(small_j, target))
    throw input_error(fmt::format("{} disappeared on the smallest candidate when it was judged whole (it shows {}): "
                                  "nothing written",
                                  compare::to_string(kind), shown_classes(small_j)));

  if (guard && interrupt_guard::requested()) throw external::interrupted_error();
  writer.write(small.bundle, [&](const fs::path& staging, const fs::path& shown) {
    io::write_npy(io::output_file{shown / "logits.npy", staging / "logits.npy"}, small.out.values);
    if (small.repeat) io::write_npy(io::output_file{shown / "repeat.npy", staging / "repeat.npy"}, small.repeat->values);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}: m {} -> {}, n {} -> {}, heads {} -> {}, head_dim {} -> {} ({} candidates in {:.1f} s{})\n", o.out,
             job.p.m, small_p.m, job.p.n, small_p.n, job.p.heads, small_p.heads, job.p.head_dim, small_p.head_dim,
             kept.candidates, seconds, kept.budget_ran_out ? "; the candidate budget ran out: smaller may exist" : "");
  fmt::print("  {}\n", small.bundle.spec.description);
  print_judgement(fmt::format("{}/logits.npy", o.out), small_j, small.bundle.spec.name, job.c);
  fmt::print("reproduce: mqacheck check {} --logits {}/logits.npy{}{}\n", o.out, o.out,
             small.repeat ? fmt::format(" --repeat {}/repeat.npy", o.out) : "",
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
      ->check(positive_seconds())
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
