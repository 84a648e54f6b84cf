// `mqacheck check`: an output made by any program, judged against a bundle.
#include <fmt/core.h>

#include <bit>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>
#include <string>

#include "commands.hpp"
#include "contract_options.hpp"
#include "reference_engine.hpp"
#include "reports/report.hpp"
#include "validator/activity.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/bundle/files.hpp"
#include "validator/compare/columns.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/io/output_path.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::cli {
namespace {

struct check_options {
  std::string bundle_dir, logits, json, repeat;
  bool json_given = false;  // `--json ''` is an error, not "no JSON"
  contract_options declared;
  unsigned threads = 0;
};

// What check reads: --json must be none of these.
std::vector<io::named_input> inputs_of(const check_options& o) {
  std::vector<io::named_input> inputs{{"--logits", o.logits}, {"--repeat", o.repeat}};
  const std::filesystem::path dir = o.bundle_dir;
  inputs.push_back({fmt::format("the bundle's {}", bundle::kCaseFile), dir / bundle::kCaseFile});
  for (const auto& f : bundle::kArrayFiles) inputs.push_back({fmt::format("the bundle's {}", f.file), dir / f.file});
  return inputs;
}

int check_command(const check_options& o) {
  kernels::contract c = o.declared.contract();
  // Before any work: the JSON's path must take a file, and never one of the inputs.
  std::optional<io::output_file> json;
  if (o.json_given) json = io::resolve_output_file("--json", o.json, inputs_of(o));

  const activity::scope doing(fmt::format("check {}", o.bundle_dir));
  const bundle::bundle b = bundle::load_bundle(o.bundle_dir);
  const inputs::tensors& t = b.inputs;
  if (!o.declared.mask() && c.columns == kernels::columns_layout::absolute)
    c.mask = b.spec.clean_logits ? kernels::masking::clean : kernels::masking::dont_care;

  const exact::problem p = inputs::problem_of(b.spec, t);
  // Relative columns (DeepGEMM's max_seqlen_k): [M, S] with S at least the longest window.
  const bool relative = c.columns == kernels::columns_layout::relative;
  const std::int64_t width = relative ? compare::relative_width(p) : t.n;
  const io::npy_header header = io::read_npy_header(o.logits);
  const bool bf16 = c.logits == bounds::logits_precision::bf16;
  const bool dtype_ok = bf16 ? io::is_bfloat16_typestring(header.typestring) : header.typestring == "<f4";
  if (!dtype_ok || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != t.m ||
      static_cast<std::int64_t>(header.shape[1]) < width)
    throw input_error(fmt::format(
        "{}: expected {} [{}, S] with S >= {} ({}){}, found {}", o.logits, bf16 ? "bfloat16" : "float32", t.m, width,
        relative ? "the bundle's m and its longest window: --columns relative" : "the bundle's m and n",
        bf16 ? ": uint16 bfloat16 bits or ml_dtypes' bfloat16 (np.save writes '<V2')"
             : " (a bfloat16 output needs --logits-dtype bf16)",
        io::describe(header)));
  auto read_logits = [bf16](const std::string& file) {
    return bf16 ? io::read_bfloat16_npy(file) : io::read_npy<float>(file);
  };
  xt::xarray<float> logits = read_logits(o.logits);
  const auto stride = static_cast<std::int64_t>(header.shape[1]);
  // The comparator judges absolute [M, N] outputs: a relative one is mapped onto one first.
  std::vector<float> absolute, absolute_repeat;
  auto judged_view = [&](xt::xarray<float>& written, std::vector<float>& image) -> kernels::output_view {
    const kernels::output_view view{written.data(), t.m, relative ? width : t.n, stride};
    if (!relative) return view;
    image = compare::absolute_from_relative(view, p, -INFINITY);
    return {image.data(), t.m, t.n, t.n};
  };

  exact::options eo;
  eo.relu = c.relu;
  eo.threads = o.threads;
  eo.bf16_logits = bf16;
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
  // A modelled contract is judged around the model's dots (runner::centre_for).
  const std::optional<exact::result> centre = runner::centre_for(c, p, reference, o.threads);
  compare::comparison_input in;
  in.problem = &p;
  in.reference = &reference;
  in.centre = centre ? &*centre : nullptr;
  in.output = judged_view(logits, absolute);
  in.contract = c;
  in.topk = b.spec.topk;
  // A harness that pre-fills its output with mqacheck's poison (float32 bits 0x7FC0DEAD; bfloat16
  // bits 0x7FDE for bf16 logits) gets `unwritten` for what the kernel never stored; no arithmetic
  // produces that payload.
  in.poisoned = true;
  in.threads = o.threads;
  compare::judgement j = compare::judge(in);
  if (!o.repeat.empty()) {
    const io::npy_header again = io::read_npy_header(o.repeat);
    if (again.typestring != header.typestring || again.shape != header.shape)
      throw input_error(fmt::format("{}: expected {} like {}, found {}", o.repeat, io::describe(header), o.logits,
                                    io::describe(again)));
    xt::xarray<float> second = read_logits(o.repeat);
    if (auto f = compare::compare_runs(in.output, judged_view(second, absolute_repeat), p, reference.rows, c.mask))
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
    cmd->add_option("--logits", o->logits,
                    "float32 [M, N] or [M, S], S >= N: the kernel's output (bfloat16 with --logits-dtype bf16)")
        ->required();
    o->declared.add_to(*cmd);
    cmd->add_option("--repeat", o->repeat, "the same kernel's output from a second launch: any bit difference is "
                                          "nondeterministic");
    CLI::Option* json = cmd->add_option("--json", o->json, "write the judgement as JSON (a new or regular file)");
    cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
    cmd->callback([o, json] {
      o->json_given = json->count() > 0;
      exit_status() = check_command(*o);
    });
  }
}

}  // namespace mqa::cli
