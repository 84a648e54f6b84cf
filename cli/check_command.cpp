// `mqacheck check`: an output made by any program, judged against a bundle.
#include <fmt/core.h>

#include <memory>
#include <optional>
#include <vector>
#include <string>

#include "api/check.hpp"
#include "api/contract_options.hpp"
#include "api/output.hpp"
#include "commands.hpp"
#include "judging.hpp"
#include "reports/report.hpp"
#include "validator/activity.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/bundle/files.hpp"
#include "validator/compare/topk_indices.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/io/json_text.hpp"
#include "validator/io/output_path.hpp"

namespace mqa::cli {
namespace {

struct check_options {
  std::string bundle_dir, logits, json, repeat;
  bool json_given = false;  // `--json ''` is an error, not "no JSON"
  bool recompute = false;     // ignore digest.json altogether
  bool trust_digest = false;  // take a reference.npy the digest proves as gen's (a bundle the user generated)
  api::contract_options declared;
  unsigned threads = 0;
  bool diagnose = true;
  // A top-k index kernel's output (validator/compare/topk_indices.hpp) and its convention.
  std::string topk_indices;
  std::string topk_columns = "absolute";
  bool topk_sorted = false;
};

// What check reads: --json must be none of these.
std::vector<io::named_input> inputs_of(const check_options& o) {
  std::vector<io::named_input> inputs{
      {"--logits", o.logits}, {"--repeat", o.repeat}, {"--topk-indices", o.topk_indices}};
  const std::filesystem::path dir = o.bundle_dir;
  inputs.push_back({fmt::format("the bundle's {}", bundle::kCaseFile), dir / bundle::kCaseFile});
  inputs.push_back({fmt::format("the bundle's {}", bundle::kDigestFile), dir / bundle::kDigestFile});
  for (const auto& f : bundle::kArrayFiles) inputs.push_back({fmt::format("the bundle's {}", f.file), dir / f.file});
  return inputs;
}

int check_command(const check_options& o) {
  o.declared.contract();  // a bad contract flag is reported before anything is read
  const std::optional<kernels::columns_layout> topk_columns =
      names::parse(kernels::kColumnsLayoutNames, o.topk_columns);
  if (!topk_columns)
    throw input_error(fmt::format("--topk-columns '{}' is not known (accepted: {})", o.topk_columns,
                                  names::accepted(kernels::kColumnsLayoutNames)));
  // Before any work: the JSON's path must take a file, and never one of the inputs.
  std::optional<io::output_file> json;
  if (o.json_given) json = io::resolve_output_file("--json", o.json, inputs_of(o));

  const activity::scope doing(fmt::format("check {}", o.bundle_dir));
  const auto b = api::open_bundle(o.bundle_dir, o.declared,
                                  o.recompute      ? bundle::digest_use::ignore
                                  : o.trust_digest ? bundle::digest_use::trust
                                                   : bundle::digest_use::verify);
  // The outputs as the contract declares them (float32 or bfloat16, absolute or relative columns),
  // each read once into the absolute image the comparator judges.
  api::judged_output logits = api::read_judged_output(o.logits, b->problem, b->contract);
  std::optional<api::judged_output> second;
  std::optional<kernels::output_view> repeat;
  if (!o.repeat.empty()) {
    const io::npy_header first = io::read_npy_header(o.logits), again = io::read_npy_header(o.repeat);
    if (again.typestring != first.typestring || again.shape != first.shape)
      throw input_error(fmt::format("{}: expected {} like {}, found {}", o.repeat, io::describe(first), o.logits,
                                    io::describe(again)));
    second.emplace(api::read_judged_output(o.repeat, b->problem, b->contract));
    repeat = second->view();
  }
  std::optional<compare::read_indices> indices;
  std::optional<kernels::indices_view> indices_view;
  if (!o.topk_indices.empty()) {
    indices = compare::read_topk_indices(o.topk_indices, b->problem.m);
    indices_view = kernels::indices_view{indices->values.data(), b->problem.m, indices->k};
  }
  const compare::judgement j = api::judge_output(
      *b, logits.view(), repeat,
      {.diagnose = o.diagnose, .threads = o.threads, .topk_indices = indices_view ? &*indices_view : nullptr,
       .topk_convention = {.columns = *topk_columns, .sorted = o.topk_sorted}});
  print_judgement(o.logits, j, b->inputs.spec.name, b->contract);
  if (json) reports::write_file(*json, io::json_text(api::judgement_document(*b, j, o.logits), 2) + "\n");
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
    CLI::Option* indices = cmd->add_option(
        "--topk-indices", o->topk_indices,
        "int32 or int64 [M, k]: a top-k kernel's indices of each row's k largest logits, -1 padding windows shorter "
        "than k; judged against the exact values under the contract's bound");
    cmd->add_option("--topk-columns", o->topk_columns,
                    "what an index counts from: absolute (the key) or relative (the key minus the row's ks)")
        ->capture_default_str()
        ->needs(indices);
    cmd->add_flag("--topk-sorted", o->topk_sorted,
                  "the indices promise descending order of value (torch.topk's sorted=True): order is judged too")
        ->needs(indices);
    CLI::Option* json = cmd->add_option("--json", o->json, "write the judgement as JSON (a new or regular file)");
    cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
    CLI::Option* trust = cmd->add_flag(
        "--trust-digest", o->trust_digest,
        "the bundle is one you generated yourself: take a reference.npy its digest.json proves as gen's instead of "
        "generating the inputs again and recomputing the reference (faster; an unkeyed digest catches accidents, "
        "not a forger)");
    cmd->add_flag("--recompute", o->recompute,
                  "ignore the bundle's digest.json altogether (a bundle whose digest.json was lost or damaged); the "
                  "inputs are generated again and the reference recomputed, as check does by default")
        ->excludes(trust);
    cmd->add_flag("--no-diagnosis{false}", o->diagnose,
                  "skip the diagnosis (findings otherwise name the planted bug mqacheck's model reproduces them with)");
    cmd->callback([o, json] {
      o->json_given = json->count() > 0;
      exit_status() = check_command(*o);
    });
  }
}

}  // namespace mqa::cli
