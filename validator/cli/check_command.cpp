// `mqacheck check`: an output made by any program, judged against a bundle.
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>
#include <string>

#include "commands.hpp"
#include "reference_engine.hpp"
#include "reports/report.hpp"
#include "validator/activity.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/bundle/digest.hpp"
#include "validator/bundle/files.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/io/output_path.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::cli {
namespace {

struct check_options {
  std::string bundle_dir, logits, json, repeat;
  bool json_given = false;  // `--json ''` is an error, not "no JSON"
  bool recompute = false;   // ignore digest.json: generate the inputs and compute the reference again
  std::string mask, accumulate = "fp32", relu = "keeps-nan";
  unsigned threads = 0;
};

// What check reads: --json must be none of these.
std::vector<io::named_input> inputs_of(const check_options& o) {
  std::vector<io::named_input> inputs{{"--logits", o.logits}, {"--repeat", o.repeat}};
  const std::filesystem::path dir = o.bundle_dir;
  inputs.push_back({fmt::format("the bundle's {}", bundle::kCaseFile), dir / bundle::kCaseFile});
  inputs.push_back({fmt::format("the bundle's {}", bundle::kDigestFile), dir / bundle::kDigestFile});
  for (const auto& f : bundle::kArrayFiles) inputs.push_back({fmt::format("the bundle's {}", f.file), dir / f.file});
  return inputs;
}

// Rows judged per block: about 2^22 elements (16 MiB of reference and 32 MiB of magnitude, more
// with a modelled centre), at most an eighth of the output, in whole blocks of exact::compute's 8.
std::int64_t check_block_rows(std::int64_t m, std::int64_t n) {
  const std::int64_t elements = std::clamp<std::int64_t>(m * n / 8, std::int64_t{1} << 18, std::int64_t{1} << 22);
  return std::clamp<std::int64_t>(elements / std::max<std::int64_t>(n, 1) / 8 * 8, 8, std::max<std::int64_t>(m, 8));
}

int check_command(const check_options& o) {
  const auto dot = bounds::parse_dot_accumulator(o.accumulate);
  if (!dot) throw input_error(fmt::format("--accumulate '{}' is not known (accepted: exact, fp32, fp22-truncated, bf16)", o.accumulate));
  kernels::contract c = kernels::declared_arithmetic(*dot);
  if (o.relu == "keeps-nan") c.relu = exact::relu_rule::keeps_nan;
  else if (o.relu == "fmax") c.relu = exact::relu_rule::fmax;
  else throw input_error(fmt::format("--relu '{}' is not known (accepted: keeps-nan, fmax)", o.relu));
  // Before any work: the JSON's path must take a file, and never one of the inputs.
  std::optional<io::output_file> json;
  if (o.json_given) json = io::resolve_output_file("--json", o.json, inputs_of(o));

  const activity::scope doing(fmt::format("check {}", o.bundle_dir));
  const bundle::bundle_inputs b = bundle::load_bundle_inputs(o.bundle_dir, !o.recompute);
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
  std::vector<float> logits = io::read_npy_vector<float>(o.logits);
  const auto stride = static_cast<std::int64_t>(header.shape[1]);

  const exact::problem p = inputs::problem_of(b.spec, t);
  compare::comparison_input in;
  in.problem = &p;
  in.output = {logits.data(), t.m, t.n, stride};
  in.contract = c;
  in.topk = b.spec.topk;
  // A harness that pre-fills its output with mqacheck's poison (float32 bits 0x7FC0DEAD) gets
  // `unwritten` for what the kernel never stored; no arithmetic produces that payload.
  in.poisoned = true;
  in.threads = o.threads;
  compare::judge_session session(in);
  // Row blocks (issue 11): the reference, its magnitude and a modelled contract's centre exist for
  // one block at a time, never for the whole output.
  const std::int64_t block = check_block_rows(t.m, t.n);
  std::vector<float> stored;
  for (std::int64_t first = 0; first < t.m; first += block) {
    const std::int64_t count = std::min(block, t.m - first);
    stored.resize(static_cast<std::size_t>(count * t.n));
    bundle::read_reference_rows(b, first, count, stored);
    exact::options eo;
    eo.relu = c.relu;
    eo.threads = o.threads;
    eo.rows.resize(static_cast<std::size_t>(count));
    std::iota(eo.rows.begin(), eo.rows.end(), first);
    exact::result reference;
    if (!b.trusted) {
      // No digest to prove reference.npy is the keeps-NaN reference of these inputs: compute it.
      exact::options ko = eo;  // with its magnitude: the GPU engine computes both
      ko.relu = exact::relu_rule::keeps_nan;
      exact::result keeps_nan = exact_reference(p, ko);
      for (std::size_t x = 0; x < stored.size(); ++x)
        if (std::bit_cast<std::uint32_t>(stored[x]) != std::bit_cast<std::uint32_t>(keeps_nan.logits[x]))
          throw input_error(fmt::format("{}/reference.npy: element ({}, {}) differs from the exact reference of the "
                                        "bundle's inputs: the bundle was modified or mixed up",
                                        o.bundle_dir, first + static_cast<std::int64_t>(x) / t.n,
                                        static_cast<std::int64_t>(x) % t.n));
      if (c.relu == exact::relu_rule::keeps_nan) reference = std::move(keeps_nan);
    }
    if (reference.rows.empty() && count > 0) {
      // Elements with all inputs finite are the same under either relu rule: reference.npy gives
      // them, and only the magnitude and the elements a non-finite input touches are computed.
      eo.known_logits = stored;
      reference = exact::compute(p, eo);
    }
    // A modelled contract is judged around the model's dots (runner::centre_for).
    const std::optional<exact::result> centre = runner::centre_for(c, p, reference, o.threads);
    session.add(reference, centre ? &*centre : nullptr);
  }
  compare::judgement j = session.finish();
  if (!o.repeat.empty()) {
    const io::npy_header again = io::read_npy_header(o.repeat);
    if (again.typestring != header.typestring || again.shape != header.shape)
      throw input_error(fmt::format("{}: expected {} like {}, found {}", o.repeat, io::describe(header), o.logits,
                                    io::describe(again)));
    std::vector<float> second = io::read_npy_vector<float>(o.repeat);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(t.m));
    std::iota(rows.begin(), rows.end(), 0);
    if (auto f = compare::compare_runs(in.output, {second.data(), t.m, t.n, stride}, p, rows, c.mask))
      j.findings.push_back(*f);
  }

  const compare::metrics& m = j.stats;
  fmt::print("{}: {} ({} under {})\n", o.logits, j.pass() ? "pass" : "FAIL", b.spec.name, kernels::describe(c));
  if (m.ulps.total == 0)
    fmt::print("  none compared: no finite in-window pair  top-k recall {}\n", reports::shown(m.topk_recall(), 4));
  else
    fmt::print("  max ULP {}  p50 {}  p99 {}  p99.9 {}  exact {:.4f}  <=1 ULP {:.4f}  max err/bound {}  top-k recall {}\n",
               m.ulps.max, m.ulps.percentile(0.5), m.ulps.percentile(0.99), m.ulps.percentile(0.999), *m.share_exact(),
               *m.share_within_one_ulp(), reports::shown(m.max_error_over_bound()), reports::shown(m.topk_recall(), 4));
  for (const auto& f : j.findings) fmt::print("  {}\n", reports::describe(f));
  for (const auto& n : j.notes) fmt::print("  note: {}\n", n);
  if (json) {
    nlohmann::json out = reports::judgement_json(j);
    out["schema"] = "mqacheck.check";
    out["schema_version"] = reports::kSchemaVersion;
    out["bundle"] = o.bundle_dir;
    out["logits"] = o.logits;
    out["case"] = b.spec.name;
    out["contract"] = kernels::describe(c);
    reports::write_file(*json, out.dump(2) + "\n");
  }
  return j.pass() ? 0 : 1;
}

}  // namespace

void add_check_command(CLI::App& app) {
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
    CLI::Option* json = cmd->add_option("--json", o->json, "write the judgement as JSON (a new or regular file)");
    cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
    cmd->add_flag("--recompute", o->recompute,
                  "ignore the bundle's digest.json: generate the inputs again and recompute the reference to prove "
                  "reference.npy (slower; for a bundle whose digest may have been rewritten)");
    cmd->callback([o, json] {
      o->json_given = json->count() > 0;
      exit_status() = check_command(*o);
    });
  }
}

}  // namespace mqa::cli
