// `mqacheck run`, `mqacheck check` and `mqacheck variants`: the validator on the command line.
#include <fmt/core.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include "commands.hpp"
#include "kernels/registry.hpp"
#include "reports/report.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/runner/runner.hpp"
#include "validator/verdict/verdict.hpp"
#ifdef MQA_HAVE_GPU
#include "kernels/hip/exact_logits.hpp"
#include "kernels/hip/runner.hpp"
#endif

namespace mqa::cli {
namespace {

namespace fs = std::filesystem;

std::string contract_line(const kernels::variant& v) { return kernels::describe(v.declared); }

// The exact reference: on the GPU when this build has one and a device is usable (bit-identical to
// exact::compute, which it cross-checks on sampled elements every call), else on the CPU.
exact::result exact_reference(const exact::problem& p, const exact::options& o) {
#ifdef MQA_HAVE_GPU
  static const bool gpu = gpu::probe_device().usable;
  if (gpu) return gpu::exact_logits(p, gpu::exact_gpu_options{.reference = o});
#endif
  return exact::compute(p, o);
}

void list_variants() {
  std::size_t width = 0;
  for (const auto& v : kernels::all_variants()) width = std::max(width, v.name.size());
  for (const auto& v : kernels::all_variants()) {
    if (v.must_produce.empty()) {
      fmt::print("{:<{}}  model   {}\n{:<{}}          {}\n", v.name, width, contract_line(v), "", width, v.description);
    } else {
      std::string must;
      for (const auto& s : v.must_produce) must += (must.empty() ? "" : " or ") + s;
      fmt::print("{:<{}}  mutant  {}: must produce {}\n{:<{}}          {}\n", v.name, width, v.bug_class, must, "", width,
                 v.description);
    }
  }
}

// A one-line progress bar on a terminal; nothing when stderr is a file or a pipe (CI logs).
void show_progress(std::size_t done, std::size_t total, const std::string& what) {
  static const bool terminal = ::isatty(STDERR_FILENO);
  if (!terminal || total < 8) return;
  const int width = 30;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  fmt::print(stderr, "\r[{}{}] {}/{} {:<50.50}", std::string(filled, '#'), std::string(width - filled, '.'), done,
             total, what);
  if (done == total) fmt::print(stderr, "\r{:<100}\r", "");
}

struct run_options {
  std::string cases_file;
  std::vector<std::string> variants;
  std::string out;
  unsigned threads = 0;
};

int run_command(const run_options& o) {
  const cases::suite s = cases::load_suite(o.cases_file);
  if (!o.out.empty()) {
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec) throw input_error(fmt::format("{}: cannot create the report folder ({})", o.out, ec.message()));
  }
  verdict::run_options ro;
  ro.variants = o.variants;
  ro.threads = o.threads;
  ro.progress = show_progress;
  ro.reference = exact_reference;
  const verdict::suite_report r = verdict::run_suite(s, ro);

  std::size_t case_width = 4, variant_width = 7;
  for (const auto& c : r.results) {
    case_width = std::max(case_width, c.case_name.size());
    variant_width = std::max(variant_width, c.variant.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<7}  {:>10}  {:>8}  {:>9}  {:>6}  {:>9}  {}\n", "case", case_width, "variant",
             variant_width, "verdict", "max ULP", "p99 ULP", "err/bound", "recall", "time", "findings");
  for (const auto& c : r.results) {
    const compare::metrics& m = c.judgement.stats;
    fmt::print("{:<{}}  {:<{}}  {:<7}  {:>10}  {:>8}  {:>9.3g}  {:>6.4f}  {:>7.2f}ms  {}\n", c.case_name, case_width,
               c.variant, variant_width, c.outcome(), m.ulps.max, m.ulps.percentile(0.99), m.max_error_over_bound,
               m.topk_recall, c.kernel_seconds * 1e3, reports::summary(c.judgement));
  }
  for (const auto& s : r.skipped) fmt::print("skipped: {}\n", s);
  fmt::print("\n{:<{}}  {:>9}  {:>9}  {:>9}\n", "case", case_width, "inputs", "reference", "total");
  for (const auto& t : r.timings)
    fmt::print("{:<{}}  {:>8.2f}s  {:>8.2f}s  {:>8.2f}s\n", t.case_name, case_width, t.inputs_seconds,
               t.reference_seconds, t.total_seconds);
  const auto broken = r.broken_expectations();
  std::size_t caught = 0;
  for (const auto& m : r.mutants) caught += !m.caught_by.empty();
  fmt::print("\nsuite '{}': {} results in {:.1f} s; mutants caught {}/{}; {}\n", r.suite_name, r.results.size(),
             r.seconds, caught, r.mutants.size(), broken.empty() ? "every expectation holds" : "EXPECTATIONS BROKEN:");
  for (const auto& b : broken) fmt::print("  - {}\n", b);
  if (!o.out.empty()) {
    const fs::path dir = o.out;
    reports::write_file(dir / "report.json", reports::suite_json(r).dump(2) + "\n");
    reports::write_file(dir / "report.xml", reports::junit_xml(r));
    reports::write_file(dir / "summary.md", reports::markdown(r));
    fmt::print("reports: {}/report.json, report.xml, summary.md\n", o.out);
  }
  return broken.empty() ? 0 : 1;
}

struct check_options {
  std::string bundle_dir, logits, json, repeat;
  std::string mask, accumulate = "fp32", relu = "keeps-nan";
  unsigned threads = 0;
};

int check_command(const check_options& o) {
  const auto dot = bounds::parse_dot_accumulator(o.accumulate);
  if (!dot) throw input_error(fmt::format("--accumulate '{}' is not known (accepted: exact, fp32, fp22-truncated, bf16)", o.accumulate));
  kernels::contract c = kernels::declared_arithmetic(*dot);
  if (o.relu == "keeps-nan") c.relu = exact::relu_rule::keeps_nan;
  else if (o.relu == "fmax") c.relu = exact::relu_rule::fmax;
  else throw input_error(fmt::format("--relu '{}' is not known (accepted: keeps-nan, fmax)", o.relu));

  const bundle::bundle b = bundle::load_bundle(o.bundle_dir);
  const inputs::tensors& t = b.inputs;
  if (o.mask.empty()) {
    c.mask = b.spec.clean_logits ? kernels::masking::clean : kernels::masking::dont_care;
  } else {
    const auto m = kernels::parse_masking(o.mask);
    if (!m) throw input_error(fmt::format("--mask '{}' is not known (accepted: clean, dont-care)", o.mask));
    c.mask = *m;
  }

  const io::npy_header header = io::read_npy_header(o.logits);
  if (header.typestring != "<f4" || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != t.m ||
      static_cast<std::int64_t>(header.shape[1]) < t.n)
    throw input_error(fmt::format("{}: expected float32 [{}, S] with S >= {} (the bundle's m and n), found {}", o.logits,
                                  t.m, t.n, io::describe(header)));
  xt::xarray<float> logits = io::read_npy<float>(o.logits);
  const auto stride = static_cast<std::int64_t>(header.shape[1]);

  const exact::problem p = inputs::problem_of(b.spec, t);
  exact::options eo;
  eo.relu = c.relu;
  eo.threads = o.threads;
  const exact::result reference = exact_reference(p, eo);
  {
    // reference.npy is the keeps-NaN reference of the bundle's inputs (cases/README.md).
    exact::result keeps_nan;
    if (c.relu != exact::relu_rule::keeps_nan) {
      exact::options ko = eo;
      ko.relu = exact::relu_rule::keeps_nan;
      keeps_nan = exact_reference(p, ko);
    }
    const exact::result& stored = c.relu == exact::relu_rule::keeps_nan ? reference : keeps_nan;
    for (std::size_t x = 0; x < stored.logits.size(); ++x)
      if (std::bit_cast<std::uint32_t>(stored.logits[x]) != std::bit_cast<std::uint32_t>(b.reference[x]))
        throw input_error(fmt::format("{}/reference.npy: element ({}, {}) differs from the exact reference of the "
                                      "bundle's inputs: the bundle was modified or mixed up",
                                      o.bundle_dir, x / static_cast<std::size_t>(t.n), x % static_cast<std::size_t>(t.n)));
  }
  compare::comparison_input in;
  in.problem = &p;
  in.reference = &reference;
  in.output = {logits.data(), t.m, t.n, stride};
  in.contract = c;
  in.topk = b.spec.topk;
  // A harness that pre-fills its output with mqacheck's poison (float32 bits 0x7FC0DEAD) gets
  // `unwritten` for what the kernel never stored; no arithmetic produces that payload.
  in.poisoned = true;
  in.threads = o.threads;
  compare::judgement j = compare::judge(in);
  if (!o.repeat.empty()) {
    const io::npy_header again = io::read_npy_header(o.repeat);
    if (again.typestring != header.typestring || again.shape != header.shape)
      throw input_error(fmt::format("{}: expected {} like {}, found {}", o.repeat, io::describe(header), o.logits,
                                    io::describe(again)));
    xt::xarray<float> second = io::read_npy<float>(o.repeat);
    if (auto f = compare::compare_runs(in.output, {second.data(), t.m, t.n, stride}, p, reference.rows, c.mask))
      j.findings.push_back(*f);
  }

  const compare::metrics& m = j.stats;
  fmt::print("{}: {} ({} under {})\n", o.logits, j.pass() ? "pass" : "FAIL", b.spec.name, kernels::describe(c));
  fmt::print("  max ULP {}  p50 {}  p99 {}  p99.9 {}  exact {:.4f}  <=1 ULP {:.4f}  max err/bound {:.3g}  top-k recall {:.4f}\n",
             m.ulps.max, m.ulps.percentile(0.5), m.ulps.percentile(0.99), m.ulps.percentile(0.999), m.share_exact(),
             m.share_within_one_ulp(), m.max_error_over_bound, m.topk_recall);
  for (const auto& f : j.findings) fmt::print("  {}\n", reports::describe(f));
  for (const auto& n : j.notes) fmt::print("  note: {}\n", n);
  if (!o.json.empty()) {
    nlohmann::json out = reports::judgement_json(j);
    out["schema"] = "mqacheck.check";
    out["schema_version"] = reports::kSchemaVersion;
    out["bundle"] = o.bundle_dir;
    out["logits"] = o.logits;
    out["case"] = b.spec.name;
    out["contract"] = kernels::describe(c);
    reports::write_file(o.json, out.dump(2) + "\n");
  }
  return j.pass() ? 0 : 1;
}

}  // namespace

void add_check_commands(CLI::App& app) {
  app.add_subcommand("variants", "the variants this build knows, with their contracts")->callback(list_variants);
  {
    auto o = std::make_shared<run_options>();
    CLI::App* cmd = app.add_subcommand("run", "every case of a suite against every variant, with expectations");
    cmd->add_option("--cases", o->cases_file, "suite file (TOML)")->required();
    cmd->add_option("--variant", o->variants, "variants to run (repeatable; default: all, see `mqacheck variants`)");
    cmd->add_option("--out", o->out, "folder for report.json, report.xml (JUnit) and summary.md");
    cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
    cmd->callback([o] { exit_status() = run_command(*o); });
  }
  {
    auto o = std::make_shared<check_options>();
    CLI::App* cmd = app.add_subcommand("check", "judge an output made by any program against a bundle");
    cmd->add_option("BUNDLE", o->bundle_dir, "bundle folder (mqacheck gen)")->required();
    cmd->add_option("--logits", o->logits, "float32 [M, N] or [M, S], S >= N: the kernel's output")->required();
    cmd->add_option("--mask", o->mask, "clean (-inf outside windows) or dont-care; default: the case's clean_logits");
    cmd->add_option("--accumulate", o->accumulate, "declared dot accumulator: exact, fp32, fp22-truncated, bf16")
        ->capture_default_str();
    cmd->add_option("--relu", o->relu, "keeps-nan (torch.relu) or fmax (fmaxf, tl.maximum)")->capture_default_str();
    cmd->add_option("--repeat", o->repeat, "the same kernel's output from a second launch: any bit difference is "
                                          "nondeterministic");
    cmd->add_option("--json", o->json, "write the judgement as JSON");
    cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
    cmd->callback([o] { exit_status() = check_command(*o); });
  }
}

}  // namespace mqa::cli
