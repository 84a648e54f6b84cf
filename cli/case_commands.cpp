// `mqacheck cases FILE` and `mqacheck gen --cases FILE --case NAME --out DIR`: suites on the
// command line.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "commands.hpp"
#include "api/reference_engine.hpp"
#include "validator/activity.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/case/load.hpp"
#include "validator/layout/layout.hpp"

namespace mqa::cli {
namespace {

// One line per case: what it is at a glance, and how many rows it leaves empty (a case whose
// rows are all empty can show only masking, BUGCLASSES 13).
void list_cases(const std::string& file) {
  const cases::suite s = cases::load_suite(file);
  std::size_t width = 0;
  for (const auto& c : s.cases) width = std::max(width, c.name.size());
  for (const auto& c : s.cases) {
    const layout::windows w = layout::make_windows(c);
    // A paged case: its requests and cache (load.cpp resolved the sizes).
    const cases::layout_spec& l = c.layout;
    const std::string paged =
        l.kind == cases::layout_kind::paged
            ? fmt::format(" batch={} next_n={} block_kv={}{} cache={}x{} bytes", c.m / l.next_n, l.next_n, l.block_kv,
                          l.context_lens_2d ? " 2-D" : "", l.num_blocks.value_or(0), l.page_bytes.value_or(0))
            : "";
    fmt::print("{:<{}}  m={} n={} heads={} head_dim={}  q={} k={}  layout={}{}{}  empty_rows={}\n", c.name, width, c.m,
               c.n, c.heads, c.head_dim, fp8::traits(c.q_format).name, fp8::traits(c.k_format).name,
               cases::to_string(c.layout.kind), c.layout.out_of_range ? "+out_of_range" : "", paged,
               layout::empty_rows(w, c.n));
  }
}

struct gen_options {
  std::string cases_file, case_name, out;
  bool force = false;
};

void generate(const gen_options& o) {
  const cases::suite s = cases::load_suite(o.cases_file);
  const cases::case_spec& c = cases::find_case(s, o.case_name);
  inputs::check_generated_case(c);
  // The target is checked (and a staging folder reserved) before the minutes of work.
  bundle::bundle_writer writer("--out", o.out, o.force);
  const activity::scope doing(fmt::format("gen, case '{}' (m={}, n={}, heads={}, head_dim={})", c.name, c.m, c.n,
                                          c.heads, c.head_dim));
  // The reference is computed and written a block of rows at a time (memory below twice
  // the bundle's size).
  // On the GPU where one is usable (reference_engine.hpp: the same bits, cross-checked every call).
  const std::uint64_t fingerprint =
      bundle::generate_bundle(c, s.name, writer, api::reference_engines());
  // The fingerprint lets two machines compare their bundles without copying them.
  fmt::print("{}: case '{}' of suite '{}', inputs fingerprint {:016x}\n", o.out, c.name, s.name, fingerprint);
}

}  // namespace

void add_case_commands(CLI::App& app) {
  {
    auto file = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("cases", "list a suite's cases: name, shape, formats, layout, empty rows");
    cmd->add_option("FILE", *file, "suite file (TOML, see cases/README.md)")->required();
    cmd->callback([file] { list_cases(*file); });
  }
  {
    auto o = std::make_shared<gen_options>();
    CLI::App* cmd = app.add_subcommand("gen", "write one case's bundle: case.toml, inputs (.npy) and reference.npy");
    cmd->add_option("--cases", o->cases_file, "suite file (TOML)")->required();
    cmd->add_option("--case", o->case_name, "name of the case in the suite")->required();
    cmd->add_option("--out", o->out, "bundle folder to create (written whole or not at all)")->required();
    cmd->add_flag("--force", o->force, "replace an existing bundle folder (only a folder mqacheck gen wrote)");
    cmd->callback([o] { generate(*o); });
  }
}

}  // namespace mqa::cli
